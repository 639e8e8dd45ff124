#!/usr/bin/python3
"""A deterministic stand-in for a training script, for trainwatch's tests.

Run it with /usr/bin/python3. Each argument is one action, done in order:

  out:TEXT        write TEXT to stdout (escapes \\n \\r \\t \\xNN \\\\), then flush
  err:TEXT        the same to stderr
  epochs:N        N epochs of 3 steps: "epoch=E step=S loss=L accuracy=A" lines on
                  stdout and one "validation: val_loss=L val_acc=A" line per epoch;
                  the values are fixed functions of E and S (see below)
  bar:N           a tqdm-style progress bar on stderr: N redraws with "\\r", then "\\n"
  bigline:BYTES   one stdout line of BYTES bytes (filler, then " loss=0.25") and "\\n"
  binary          a stdout line holding bytes that are not UTF-8, and NUL
  interleave:N    N pairs of lines, alternately on stdout and stderr
  timed:N:MS      N lines "step=I t_us=T loss=L", T the time of printing in
                  microseconds since the epoch, MS milliseconds apart (0: at once)
  paced:N:MS      N lines "step=I loss=L" on a fixed schedule (line I at start +
                  I*MS), then "paced elapsed_ms=E max_late_ms=L": how long the
                  lines took and how late the latest one was (a blocked stdout shows)
  flood:BYTES     BYTES bytes of numbered stdout lines (the last one shortened
                  to fit, still ending in "\\n"), as fast as possible
  cat-out:FILE    copy FILE to stdout in pieces of 7 bytes, flushing each
  cat-err:FILE    the same to stderr
  isatty          print "stdout_tty=0|1 stderr_tty=0|1 cols=C rows=R"
  env:NAME        print "NAME=<value>" (or "NAME unset")
  cwd             print "cwd=<working directory>"
  pid             print "pid=<its process id>"
  sleep:MS        sleep MS milliseconds
  touch:FILE      create FILE (tells a test that this point was reached)
  wait-file:FILE  wait until FILE exists
  ignore-term     ignore SIGTERM from now on
  ignore-int      ignore SIGINT (Ctrl-C) from now on
  default-term    SIGTERM back to its default action (processes forked before keep
                  ignoring it)
  hang            sleep until killed
  orphan:MS       fork a child that keeps stdout and stderr open, writes "orphan
                  done" after MS ms and exits; the parent prints "orphan pid=PID"
                  and goes on at once
  on-winch        from now on print "winch cols=C rows=R" on each SIGWINCH
  close-stdout    close stdout (stderr stays open)
  crash           raise ValueError: a Python traceback on stderr, exit code 1
  exit:CODE       exit with CODE now
  kill:SIG        kill itself with signal SIG (a number)

Without an exit action it exits 0. Ctrl-C (SIGINT, i.e. KeyboardInterrupt) at any
point prints "interrupted" to stderr and exits 130.

Values of "epochs": loss = 1/(E*3+S+1) rounded to 4 places, accuracy = 1 - loss;
val_loss = loss of the epoch's last step + 0.05, val_acc = 1 - val_loss.
"""
import os
import signal
import sys
import time


def unescape(text):
    return text.encode("latin-1", "backslashreplace").decode("unicode_escape").encode("latin-1")


def write(stream, data):
    stream.buffer.write(data)
    stream.buffer.flush()


def line_values(epoch, step):
    loss = round(1.0 / (epoch * 3 + step + 1), 4)
    return loss, round(1.0 - loss, 4)


def do_epochs(n):
    for epoch in range(1, n + 1):
        for step in range(3):
            loss, acc = line_values(epoch, step)
            write(sys.stdout, b"epoch=%d step=%d loss=%.4f accuracy=%.4f\n" % (epoch, step, loss, acc))
        val_loss = round(line_values(epoch, 2)[0] + 0.05, 4)
        write(sys.stdout, b"validation: val_loss=%.4f val_acc=%.4f\n" % (val_loss, round(1 - val_loss, 4)))


def do_bar(n):
    for i in range(n + 1):
        pct = i * 100 // n
        filled = pct // 10
        bar = "\u2588" * filled + " " * (10 - filled)
        write(sys.stderr, ("\r%3d%%|%s| %d/%d" % (pct, bar, i, n)).encode("utf-8"))
    write(sys.stderr, b"\n")


def do_orphan(ms):
    pid = os.fork()
    if pid == 0:
        time.sleep(ms / 1000.0)
        try:
            write(sys.stdout, b"orphan done\n")
        except OSError:
            pass
        os._exit(0)
    write(sys.stdout, b"orphan pid=%d\n" % pid)


def nap(seconds):
    """time.sleep in pieces of at most 50 ms.

    Python's signal handler only sets a flag; a signal that lands between the last
    check of that flag and the sleep's system call does not interrupt the sleep, so
    a Ctrl-C would wait for the whole sleep (an hour, for "hang"). Short pieces bound
    that wait.
    """
    end = time.monotonic() + seconds
    while True:
        left = end - time.monotonic()
        if left <= 0:
            return
        time.sleep(min(left, 0.05))


def on_winch(signum, frame):
    size = os.get_terminal_size(1)
    write(sys.stdout, b"winch cols=%d rows=%d\n" % (size.columns, size.lines))


def run(actions):
    for action in actions:
        name, _, arg = action.partition(":")
        if name == "out":
            write(sys.stdout, unescape(arg))
        elif name == "err":
            write(sys.stderr, unescape(arg))
        elif name == "epochs":
            do_epochs(int(arg))
        elif name == "bar":
            do_bar(int(arg))
        elif name == "bigline":
            size = int(arg)
            tail = b" loss=0.25"
            write(sys.stdout, b"x" * (size - len(tail)) + tail + b"\n")
        elif name == "binary":
            write(sys.stdout, b"bytes \xff\xfe \xc3\x28 nul=\x00 end loss=0.5\n")
        elif name == "interleave":
            for i in range(int(arg)):
                write(sys.stdout, b"out %d\n" % i)
                write(sys.stderr, b"err %d\n" % i)
        elif name == "timed":
            count, _, ms = arg.partition(":")
            for i in range(int(count)):
                write(sys.stdout, b"step=%d t_us=%d loss=0.%04d\n" % (i, time.time_ns() // 1000, i % 10000))
                if int(ms) > 0:
                    time.sleep(int(ms) / 1000.0)
        elif name == "paced":
            count, _, ms = arg.partition(":")
            start = time.monotonic()
            late = 0.0
            for i in range(int(count)):
                due = start + i * int(ms) / 1000.0
                now = time.monotonic()
                if now < due:
                    time.sleep(due - now)
                late = max(late, time.monotonic() - due)
                write(sys.stdout, b"step=%d loss=0.%04d\n" % (i, i % 10000))
            write(sys.stdout, b"paced elapsed_ms=%d max_late_ms=%d\n" % (
                (time.monotonic() - start) * 1000, late * 1000))
        elif name == "flood":
            left = int(arg)
            i = 0
            chunk = []
            while left > 0:
                line = b"flood line %08d loss=0.%d\n" % (i, i % 10)
                if len(line) > left:
                    line = line[:left - 1] + b"\n"
                chunk.append(line)
                left -= len(line)
                i += 1
                if len(chunk) == 512:
                    sys.stdout.buffer.write(b"".join(chunk))
                    chunk = []
            sys.stdout.buffer.write(b"".join(chunk))
            sys.stdout.buffer.flush()
        elif name in ("cat-out", "cat-err"):
            stream = sys.stdout if name == "cat-out" else sys.stderr
            with open(arg, "rb") as f:
                data = f.read()
            for i in range(0, len(data), 7):
                write(stream, data[i:i + 7])
        elif name == "isatty":
            size = os.get_terminal_size(1) if os.isatty(1) else os.terminal_size((0, 0))
            write(sys.stdout, b"stdout_tty=%d stderr_tty=%d cols=%d rows=%d\n" % (
                os.isatty(1), os.isatty(2), size.columns, size.lines))
        elif name == "env":
            value = os.environ.get(arg)
            text = "%s unset\n" % arg if value is None else "%s=%s\n" % (arg, value)
            write(sys.stdout, text.encode())
        elif name == "pid":
            write(sys.stdout, b"pid=%d\n" % os.getpid())
        elif name == "cwd":
            write(sys.stdout, ("cwd=%s\n" % os.getcwd()).encode())
        elif name == "sleep":
            nap(int(arg) / 1000.0)
        elif name == "touch":
            open(arg, "a").close()
        elif name == "wait-file":
            while not os.path.exists(arg):
                time.sleep(0.005)
        elif name == "ignore-term":
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        elif name == "default-term":
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
        elif name == "ignore-int":
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        elif name == "hang":
            while True:
                nap(3600)
        elif name == "orphan":
            do_orphan(int(arg))
        elif name == "on-winch":
            signal.signal(signal.SIGWINCH, on_winch)
        elif name == "close-stdout":
            sys.stdout.flush()
            os.close(1)
        elif name == "crash":
            def load(lr):
                raise ValueError("learning rate must be positive, got %s" % lr)
            load(-0.1)
        elif name == "exit":
            sys.exit(int(arg))
        elif name == "kill":
            os.kill(os.getpid(), int(arg))
            time.sleep(10)
        else:
            sys.stderr.write("fake_trainer: unknown action %r\n" % action)
            sys.exit(64)


def main():
    try:
        run(sys.argv[1:])
    except KeyboardInterrupt:
        try:
            write(sys.stderr, b"interrupted\n")
        except OSError:
            pass
        sys.exit(130)


if __name__ == "__main__":
    main()
