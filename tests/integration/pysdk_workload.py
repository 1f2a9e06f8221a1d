"""The workload of test_sdk_profiles.py's Python SDK tests: a program profiled by the real Pyroscope
Python SDK (pyroscope-io; 1.x pushes Connect push.v1.PusherService/Push, 0.8.x POST /ingest), run by
the venv's python of that SDK with SERVER_URL, APP_NAME and WORK_S from the environment. It spends
WORK_S seconds of CPU in fib_work (recursive fib) and then in sieve_work, in the main thread (or, with
REPORT_S, alternately until 1 s past the first multiple of REPORT_S seconds 1 s away), and prints "pushed" after
shutdown (which sends the last report)."""

import os
import time

import pyroscope


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def fib_work(seconds):
    end = time.time() + seconds
    while time.time() < end:
        fib(18)


def sieve_work(seconds):
    end = time.time() + seconds
    while time.time() < end:
        marks = [True] * 20000
        for i in range(2, 142):
            if marks[i]:
                for j in range(i * i, 20000, i):
                    marks[j] = False


def main():
    pyroscope.configure(application_name=os.environ["APP_NAME"], server_address=os.environ["SERVER_URL"],
                        sample_rate=100, tags={"env": "test"}, oncpu=True, gil_only=True)
    work = float(os.environ.get("WORK_S", "1"))
    period = int(os.environ.get("REPORT_S", "0"))
    if period:
        # past the SDK's first report time at least 1 s away, then 1 s more: that report, with 1 s or
        # more of both functions (they alternate all along), is sent by its timer (0.8.x's last
        # report, at shutdown, is sometimes lost)
        end = max(time.time() + 2 * work, (int(time.time() + 1) // period + 1) * period + 1)
        while time.time() < end:
            fib_work(0.25)
            sieve_work(0.25)
    else:
        fib_work(work)
        sieve_work(work)
    pyroscope.shutdown()
    print("pushed", flush=True)


if __name__ == "__main__":
    main()
