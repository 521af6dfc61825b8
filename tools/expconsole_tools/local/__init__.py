"""The local server (`expconsole serve`): template.yaml's HTTP API on this machine, on moto or the account.

API Gateway is emulated in the server's process (gateway.py, server.py); each function runs in
sandboxes as on Lambda, worker processes that import it once and serve one invocation at a time
(sandbox.py), so concurrent requests run concurrently.
"""
