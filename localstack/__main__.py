"""python -m localstack up | demo-data | jars"""

from __future__ import annotations

import sys


def main() -> int:
    command = sys.argv[1] if len(sys.argv) > 1 else "up"
    if command == "up":
        from localstack.up import up

        return up()
    if command == "jars":
        from localstack.jars import main as jars_main

        return jars_main()
    if command == "demo-data":
        from localstack.demo_data import main as demo_main

        return demo_main(sys.argv[2:])
    print(f"usage: python -m localstack [up|demo-data|jars]; unknown command {command!r}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
