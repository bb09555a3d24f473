"""The `adcli` commands, one module each: run, test, graph, check, repl.

Each parses its options and calls the layer below (`adcli.core`, `adcli.repl`).
`app` is the typer application that gathers them; `adcli.cli` is the entry point.
"""
