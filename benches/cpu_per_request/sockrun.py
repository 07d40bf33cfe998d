# Runs argv with stderr connected to a unix stream socket (as systemd connects it to journald, JOURNAL_STREAM set),
# whose other end is read and discarded.
import os, socket, subprocess, sys, threading
a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
st = os.fstat(a.fileno())
env = dict(os.environ, JOURNAL_STREAM=f"{st.st_dev}:{st.st_ino}")
p = subprocess.Popen(sys.argv[1:], stderr=a.fileno(), env=env)
a.close()
def drain():
    while b.recv(65536):
        pass
threading.Thread(target=drain, daemon=True).start()
try:
    sys.exit(p.wait())
except KeyboardInterrupt:
    p.terminate()
