"""The `kraft-acl` command line (typer): the root app (`app`), the error line (`errors`), the output option
(`output`), the connection options to serve (`options`), and one module per command group, named after it.

The only package that imports typer; each command parses, calls the library, prints.
"""
