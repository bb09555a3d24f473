"""The interactive loop of `adcli repl`: `loop` runs entries, `editor` reads them,
`help` answers `:help`."""
