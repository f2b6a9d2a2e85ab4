"""python -m localstack up [--detach] | down | status | demo-data | jars"""

from __future__ import annotations

import sys

USAGE = "usage: python -m localstack [up [--detach]|down|status|demo-data|jars]"


def main() -> int:
    command = sys.argv[1] if len(sys.argv) > 1 else "up"
    if command == "up" and "--detach" in sys.argv[2:]:
        from localstack.control import up_detached

        return up_detached()
    if command == "up":
        from localstack.up import up

        return up()
    if command == "down":
        from localstack.control import down

        return down()
    if command == "status":
        from localstack.control import status

        return status()
    if command == "jars":
        from localstack.jars import main as jars_main

        return jars_main()
    if command == "demo-data":
        from localstack.demo_data import main as demo_main

        return demo_main(sys.argv[2:])
    print(f"{USAGE}; unknown command {command!r}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
