"""A scripted simulated user for the harness's `exec` provider.

The scripted agent (agent.py) needs no details from its user: it acts at
once and then replies, so the user's only turn thanks it and ends the
conversation with τ²'s stop marker, as τ²'s user simulator does.
"""

import sys


def main():
    sys.stdin.read()
    sys.stdout.write("Thank you, that is all. ###STOP###")


if __name__ == "__main__":
    main()
