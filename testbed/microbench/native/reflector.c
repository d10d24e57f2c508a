/*
 * innet veth reflector: bounces every IPv4 frame received on IFACE back out of IFACE,
 * unparsed and unchanged, with recvmmsg/sendmmsg batches (AF_PACKET). It does nothing
 * else, so a closed loop through it is the ceiling of one veth port on this machine.
 *
 *   innet-veth-reflector IFACE
 *
 * Prints "ready" on stdout once bound; runs until SIGTERM or SIGINT, then prints one
 * JSON line with the frames it bounced.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#ifndef PACKET_QDISC_BYPASS
#define PACKET_QDISC_BYPASS 20
#endif
#ifndef PACKET_IGNORE_OUTGOING
#define PACKET_IGNORE_OUTGOING 23
#endif

enum { BATCH = 64, MAX_LEN = 9216 };

static volatile sig_atomic_t stop;
static void on_signal(int sig) { (void)sig; stop = 1; }

static struct mmsghdr msgs[BATCH];
static struct iovec iov[BATCH];
static uint8_t bufs[BATCH][MAX_LEN];

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s IFACE\n", argv[0]);
        return 2;
    }
    struct sigaction sa = { .sa_handler = on_signal };
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    int fd = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_IP));
    if (fd < 0) {
        perror("innet-veth-reflector: AF_PACKET socket");
        return 1;
    }
    unsigned ifindex = if_nametoindex(argv[1]);
    if (!ifindex) {
        fprintf(stderr, "innet-veth-reflector: no interface %s\n", argv[1]);
        return 2;
    }
    struct sockaddr_ll sll = { .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_IP),
                               .sll_ifindex = (int)ifindex };
    if (bind(fd, (struct sockaddr *)&sll, sizeof sll) < 0) {
        perror("innet-veth-reflector: bind");
        return 1;
    }
    int one = 1, buf = 8 << 20;
    setsockopt(fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof one);
    setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof one);
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf);
    for (int i = 0; i < BATCH; i++) {
        iov[i].iov_base = bufs[i];
        msgs[i].msg_hdr.msg_iov = &iov[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
    }
    printf("ready\n");
    fflush(stdout);
    long bounced = 0;
    while (!stop) {
        for (int i = 0; i < BATCH; i++)
            iov[i].iov_len = MAX_LEN;
        int n = recvmmsg(fd, msgs, BATCH, MSG_WAITFORONE, NULL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            perror("innet-veth-reflector: recvmmsg");
            return 1;
        }
        for (int i = 0; i < n; i++)
            iov[i].iov_len = msgs[i].msg_len;
        int off = 0;
        while (off < n) {
            int r = sendmmsg(fd, msgs + off, n - off, 0);
            if (r <= 0)
                break;
            off += r;
        }
        bounced += off;
    }
    printf("{\"bounced\": %ld}\n", bounced);
    return 0;
}
