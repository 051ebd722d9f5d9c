"""`python -m kraftacl`: the same as the `kraft-acl` command."""

from kraftacl.main import main

main()
