/*
 * innet veth sender: a closed-loop packet generator on one interface (AF_PACKET).
 *
 *   innet-veth-sender IFACE FRAMES WINDOW SECONDS WARMUP
 *
 * FRAMES is a file of frames, each a little-endian uint16 length then the bytes; they are
 * sent in turn. WINDOW frames are kept in flight: every frame received on IFACE (from the
 * device under test) lets one more go out, both directions batched with recvmmsg and
 * sendmmsg. When nothing comes back for 20 ms the window is considered lost and sent
 * again (counted as "reprimes"). After WARMUP seconds the counters start; after SECONDS
 * more it prints one JSON line: sent, received, seconds, pps (received per second),
 * reprimes.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#ifndef PACKET_QDISC_BYPASS
#define PACKET_QDISC_BYPASS 20
#endif
#ifndef PACKET_IGNORE_OUTGOING
#define PACKET_IGNORE_OUTGOING 23
#endif

enum { BATCH = 64, MAX_FRAMES = 4096, MAX_LEN = 9216 };

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint8_t *frames[MAX_FRAMES];
static size_t lens[MAX_FRAMES];
static int nframes, next_frame;
static struct mmsghdr smsg[BATCH], rmsg[BATCH];
static struct iovec siov[BATCH], riov[BATCH];
static uint8_t rbuf[BATCH][MAX_LEN];

static int load(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    uint8_t hdr[2];
    while (nframes < MAX_FRAMES && fread(hdr, 1, 2, f) == 2) {
        size_t len = hdr[0] | (size_t)hdr[1] << 8;
        if (len == 0 || len > MAX_LEN)
            break;
        frames[nframes] = malloc(len);
        if (!frames[nframes] || fread(frames[nframes], 1, len, f) != len)
            break;
        lens[nframes++] = len;
    }
    fclose(f);
    return nframes > 0 ? 0 : -1;
}

/* Send n frames (in batches); returns how many the kernel took. */
static long send_frames(int fd, long n)
{
    long done = 0;
    while (done < n) {
        int b = n - done < BATCH ? (int)(n - done) : BATCH;
        for (int i = 0; i < b; i++) {
            siov[i].iov_base = frames[next_frame];
            siov[i].iov_len = lens[next_frame];
            next_frame = (next_frame + 1) % nframes;
        }
        int r = sendmmsg(fd, smsg, b, 0);
        if (r <= 0) {
            if (r < 0 && errno == EINTR)
                continue;
            break; /* full: these are lost; the reprime covers it */
        }
        done += r;
    }
    return done;
}

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: %s IFACE FRAMES WINDOW SECONDS WARMUP\n", argv[0]);
        return 2;
    }
    long window = atol(argv[3]);
    double seconds = atof(argv[4]), warmup = atof(argv[5]);
    if (window < 1 || seconds <= 0 || warmup < 0) {
        fprintf(stderr, "innet-veth-sender: WINDOW must be >= 1, SECONDS > 0, WARMUP >= 0\n");
        return 2;
    }
    if (load(argv[2]) < 0) {
        fprintf(stderr, "innet-veth-sender: %s: no frames (uint16 LE length + bytes each)\n", argv[2]);
        return 2;
    }
    int fd = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_IP));
    if (fd < 0) {
        perror("innet-veth-sender: AF_PACKET socket");
        return 1;
    }
    unsigned ifindex = if_nametoindex(argv[1]);
    if (!ifindex) {
        fprintf(stderr, "innet-veth-sender: no interface %s\n", argv[1]);
        return 2;
    }
    struct sockaddr_ll sll = { .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_IP),
                               .sll_ifindex = (int)ifindex };
    if (bind(fd, (struct sockaddr *)&sll, sizeof sll) < 0) {
        perror("innet-veth-sender: bind");
        return 1;
    }
    int one = 1, buf = 8 << 20;
    setsockopt(fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof one);
    setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof one);
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf);
    for (int i = 0; i < BATCH; i++) {
        smsg[i].msg_hdr.msg_iov = &siov[i];
        smsg[i].msg_hdr.msg_iovlen = 1;
        riov[i].iov_base = rbuf[i];
        riov[i].iov_len = MAX_LEN;
        rmsg[i].msg_hdr.msg_iov = &riov[i];
        rmsg[i].msg_hdr.msg_iovlen = 1;
    }
    double start = now_s(), t0 = start + warmup, end = t0 + seconds;
    long sent = 0, received = 0, reprimes = 0, sent0 = 0, received0 = 0;
    int counting = 0;
    sent += send_frames(fd, window);
    double last_rx = now_s();
    struct pollfd pfd = { fd, POLLIN, 0 };
    for (;;) {
        double now = now_s();
        if (!counting && now >= t0) {
            counting = 1;
            sent0 = sent;
            received0 = received;
            t0 = now;
        }
        if (now >= end)
            break;
        int r = poll(&pfd, 1, 5);
        if (r < 0 && errno != EINTR) {
            perror("innet-veth-sender: poll");
            return 1;
        }
        int got = recvmmsg(fd, rmsg, BATCH, MSG_DONTWAIT, NULL);
        if (got > 0) {
            received += got;
            sent += send_frames(fd, got);
            last_rx = now_s();
        } else if (now_s() - last_rx > 0.02) {
            reprimes++;
            sent += send_frames(fd, window);
            last_rx = now_s();
        }
    }
    double elapsed = now_s() - t0;
    long rx = received - received0;
    printf("{\"sent\": %ld, \"received\": %ld, \"seconds\": %.6f, \"pps\": %.1f, \"reprimes\": %ld, "
           "\"window\": %ld, \"frame_bytes\": %zu}\n",
           sent - sent0, rx, elapsed, rx / elapsed, reprimes, window, lens[0]);
    return 0;
}
