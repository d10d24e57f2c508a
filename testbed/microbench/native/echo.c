/*
 * innet UDP echo switch: answers every innet CONTRIB on a UDP port with its RESULT, as the
 * switch does for a one-worker sum job (the sum of one contribution is itself), with
 * recvmmsg/sendmmsg batches. It bounds nothing but the kernel's loopback, so an agent
 * streaming through it shows the agent's own chunk rate.
 *
 *   innet-echo-switch HOST PORT
 *
 * Prints "ready PORT" once bound (PORT 0 picks one); runs until SIGTERM or SIGINT.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

enum { BATCH = 64, MAX_LEN = 65536 };

static volatile sig_atomic_t stop;
static void on_signal(int sig) { (void)sig; stop = 1; }

static struct mmsghdr msgs[BATCH];
static struct iovec iov[BATCH];
static struct sockaddr_in peers[BATCH];
static uint8_t bufs[BATCH][MAX_LEN];

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s HOST PORT\n", argv[0]);
        return 2;
    }
    struct sigaction sa = { .sa_handler = on_signal };
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[2])) };
    if (fd < 0 || inet_pton(AF_INET, argv[1], &addr.sin_addr) != 1
        || bind(fd, (struct sockaddr *)&addr, sizeof addr) < 0) {
        perror("innet-echo-switch: bind");
        return 1;
    }
    int buf = 8 << 20;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf);
    socklen_t len = sizeof addr;
    getsockname(fd, (struct sockaddr *)&addr, &len);
    printf("ready %u\n", ntohs(addr.sin_port));
    fflush(stdout);
    for (int i = 0; i < BATCH; i++) {
        iov[i].iov_base = bufs[i];
        msgs[i].msg_hdr.msg_iov = &iov[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
        msgs[i].msg_hdr.msg_name = &peers[i];
    }
    while (!stop) {
        for (int i = 0; i < BATCH; i++) {
            iov[i].iov_len = MAX_LEN;
            msgs[i].msg_hdr.msg_namelen = sizeof peers[i];
        }
        int n = recvmmsg(fd, msgs, BATCH, MSG_WAITFORONE, NULL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            perror("innet-echo-switch: recvmmsg");
            return 1;
        }
        int out = 0;
        for (int i = 0; i < n; i++) {
            uint8_t *m = bufs[i];
            if (msgs[i].msg_len < 24 || m[0] != 1)
                continue;
            m[0] = 2;                                 /* RESULT */
            m[14] = 0; m[15] = 1;                     /* num_workers 1 */
            m[16] = m[17] = m[18] = 0; m[19] = 1;     /* bitmap: worker 0 */
            iov[i].iov_len = msgs[i].msg_len;
            if (out != i) {
                memcpy(bufs[out], m, msgs[i].msg_len);
                iov[out].iov_len = msgs[i].msg_len;
                peers[out] = peers[i];
                msgs[out].msg_hdr.msg_namelen = msgs[i].msg_hdr.msg_namelen;
            }
            out++;
        }
        int off = 0;
        while (off < out) {
            int r = sendmmsg(fd, msgs + off, out - off, 0);
            if (r <= 0)
                break;
            off += r;
        }
    }
    return 0;
}
