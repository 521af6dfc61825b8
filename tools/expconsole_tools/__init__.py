"""Developer tooling around the runtime package `expconsole`: the `expconsole` command (cli),
the local server and its Lambda emulation (local), the event converters (convert), the bulk
uploader (importer) and the OpenAPI generator (openapi).

None of it runs in Lambda, so none of it ships in the core layer: the functions import
`expconsole` only, and this package may import `expconsole`, never the other way round.
"""
