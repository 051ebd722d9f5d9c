"""The `kraft-acl` program: the composition root that puts the faces together (the shell's commands and
`serve`), so that `shell/` and `server/` never import each other.

Stateless; imported once per process.
"""
