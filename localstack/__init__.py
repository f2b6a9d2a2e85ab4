"""The local stack: real services started as child processes, for `make up` and for the tests.

Nothing here is used in production; there, docker-compose.yml runs the official images.
"""
