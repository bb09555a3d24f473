"""The session core: one script run from text to report, with its budgets.

`session` runs a script's code against the autograd engine and collects what each
backward call did; `runner` turns that into output (tables, tree, JSON, HTML) and
runs it in a budgeted child process (`isolation`); `options` holds a run's
settings. `golden`, `graphing` and `checker` are what `adcli test`, `adcli graph`
and `adcli check` do, below their command-line parsing in `adcli.commands`.
"""
