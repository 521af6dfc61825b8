"""The local server (`expconsole serve`): template.yaml's HTTP API in-process, on moto or the account."""
