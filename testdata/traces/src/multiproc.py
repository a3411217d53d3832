"""Process management as Python programs do it: a multiprocessing Pool,
subprocess, fork and waitpid, a process group killed with killpg, and nice."""
import multiprocessing
import os
import signal
import subprocess
import time


def square(x):
    return x * x


def main():
    multiprocessing.set_start_method("fork")
    with multiprocessing.Pool(2) as pool:
        print(sum(pool.map(square, range(10))))
    print(subprocess.run(["true"]).returncode)

    pid = os.fork()
    if pid == 0:
        os._exit(7)
    print(os.waitpid(pid, 0)[1] >> 8)

    pid = os.fork()
    if pid == 0:
        os.setpgid(0, 0)
        time.sleep(10)
        os._exit(0)
    os.setpgid(pid, pid)
    time.sleep(0.1)
    os.killpg(pid, signal.SIGTERM)
    print(os.waitpid(pid, 0)[1] & 0x7F)

    os.nice(5)
    print(os.getpriority(os.PRIO_PROCESS, 0))


if __name__ == "__main__":
    main()
