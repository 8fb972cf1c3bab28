"""The command line: argument parsing only, one module per subcommand group (`main`: run, demo, doctor, oracle;
`tools`: tasks, judge, report, and the rest). `om2w-tui` is `om2w_tui.cli.main:main`."""
