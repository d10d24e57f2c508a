/*
 * innet veth reflector: bounces every IPv4 frame received on IFACE back out of IFACE,
 * unparsed and unchanged, with recvmmsg/sendmmsg batches (AF_PACKET). It does nothing
 * else, so a closed loop through it is the ceiling of one veth port on this machine.
 *
 *   innet-veth-reflector IFACE [--rx-ring]
 *
 * --rx-ring: receive as innet-switch's C port loop does, through a TPACKET_V2 ring of the
 * same geometry (512 frames of 16 KiB), and send each frame from its ring slot. The kernel
 * then copies a frame into the ring in the softirq of the thread that sent it, so the
 * sender's core makes the copy that recvmmsg makes on the reflector's own: this is the
 * ceiling of a device with the switch's receive path.
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
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#ifndef PACKET_QDISC_BYPASS
#define PACKET_QDISC_BYPASS 20
#endif
#ifndef PACKET_IGNORE_OUTGOING
#define PACKET_IGNORE_OUTGOING 23
#endif

enum { BATCH = 64, MAX_LEN = 9216, RING_FRAME = 16384, RING_FRAMES = 512, RING_BLOCK = 65536 };

static volatile sig_atomic_t stop;
static void on_signal(int sig) { (void)sig; stop = 1; }

static struct mmsghdr msgs[BATCH];
static struct iovec iov[BATCH];
static uint8_t bufs[BATCH][MAX_LEN];

int main(int argc, char **argv)
{
    int rx_ring = argc == 3 && strcmp(argv[2], "--rx-ring") == 0;
    if (argc != 2 && !rx_ring) {
        fprintf(stderr, "usage: %s IFACE [--rx-ring]\n", argv[0]);
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
    uint8_t *ring = NULL;
    if (rx_ring) {
        int ver = TPACKET_V2;
        struct tpacket_req req = { .tp_block_size = RING_BLOCK, .tp_block_nr = RING_FRAMES / (RING_BLOCK / RING_FRAME),
                                   .tp_frame_size = RING_FRAME, .tp_frame_nr = RING_FRAMES };
        if (setsockopt(fd, SOL_PACKET, PACKET_VERSION, &ver, sizeof ver) < 0
            || setsockopt(fd, SOL_PACKET, PACKET_RX_RING, &req, sizeof req) < 0) {
            perror("innet-veth-reflector: PACKET_RX_RING");
            return 1;
        }
        ring = mmap(NULL, (size_t)RING_FRAME * RING_FRAMES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (ring == MAP_FAILED) {
            perror("innet-veth-reflector: mmap of the ring");
            return 1;
        }
    }
    for (int i = 0; i < BATCH; i++) {
        iov[i].iov_base = bufs[i];
        msgs[i].msg_hdr.msg_iov = &iov[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
    }
    printf("ready\n");
    fflush(stdout);
    long bounced = 0;
    unsigned cur = 0;
    while (!stop) {
        int n = 0;
        unsigned first = cur;
        if (ring) {  /* the frames the kernel has put in the ring, sent from where they are */
            while (n < BATCH) {
                struct tpacket2_hdr *h = (struct tpacket2_hdr *)(ring + (size_t)cur * RING_FRAME);
                if (!(__atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE) & TP_STATUS_USER))
                    break;
                iov[n].iov_base = (uint8_t *)h + h->tp_mac;
                iov[n].iov_len = h->tp_snaplen;
                n++;
                cur = (cur + 1) % RING_FRAMES;
            }
            if (n == 0) {
                struct pollfd pfd = { .fd = fd, .events = POLLIN };
                if (poll(&pfd, 1, 100) < 0 && errno != EINTR) {
                    perror("innet-veth-reflector: poll");
                    return 1;
                }
                continue;
            }
        } else {
            for (int i = 0; i < BATCH; i++)
                iov[i].iov_len = MAX_LEN;
            n = recvmmsg(fd, msgs, BATCH, MSG_WAITFORONE, NULL);
            if (n < 0) {
                if (errno == EINTR)
                    continue;
                perror("innet-veth-reflector: recvmmsg");
                return 1;
            }
            for (int i = 0; i < n; i++)
                iov[i].iov_len = msgs[i].msg_len;
        }
        int off = 0;
        while (off < n) {
            int r = sendmmsg(fd, msgs + off, n - off, 0);
            if (r <= 0)
                break;
            off += r;
        }
        bounced += off;
        for (int i = 0; ring && i < n; i++) {  /* the batch's slots back to the kernel */
            struct tpacket2_hdr *h = (struct tpacket2_hdr *)(ring + (size_t)((first + i) % RING_FRAMES) * RING_FRAME);
            __atomic_store_n(&h->tp_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
        }
    }
    printf("{\"bounced\": %ld}\n", bounced);
    return 0;
}
