/* innet-switch's C port loop: one datapath thread that owns the port sockets.
 *
 * Why: per-packet Python socket calls and a Python call per packet cap innet-switch far
 * below what the generated C pipeline runs. Here the loop receives a batch with recvmmsg,
 * runs the whole batch through the pipeline library's sw_process_v (one call, the switch
 * mutex held for the batch: the mutex the control plane's pipeline.lock takes, so a
 * control-plane batch is never seen half applied), and sends the outputs of each port
 * with one sendmmsg, all without the GIL (Python calls pio_run through cffi, which
 * releases it).
 *
 * The pipeline is a different shared object per P4 program, so the loop holds function
 * pointers into it (pio_bind), swapped under io->mu when the device's pipeline changes.
 * What Python must see goes through one queue (pio_pop) signalled on an eventfd: frames
 * to the CPU port (PacketIn), and, while the bound pipeline is not native, every received
 * frame (the Python executor's slow path). Digests stay in the pipeline's own C queue;
 * the loop only flags that there are some.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>

typedef uint64_t u64;
typedef uint32_t u32;
typedef uint8_t u8;

#define PIO_MAX_PORTS 64
#define PIO_BATCH 64
#define PIO_SLOT 65536
#define PIO_NPORTNUM 512
#define PIO_QUEUE_MAX (32u << 20)
#define PIO_POLL_MS 50

enum { MODE_DROP = 0, MODE_PYTHON = 1, MODE_NATIVE = 2 };
enum { KIND_UDP = 0, KIND_PACKET = 1 };
enum { Q_RX = 0, Q_CPU = 1 };
/* pio_stats layout */
enum { ST_BATCHES, ST_RX, ST_TX, ST_TO_PY, ST_DROP_NOPEER, ST_DROP_NOPORT, ST_DROP_QUEUE, ST_DROP_SEND,
       ST_DROP_UNBOUND, ST_NS_RECV, ST_NS_LOCK, ST_NS_PROC, ST_NS_SEND, ST_NS_WAIT, ST_WAKEUPS, ST_DROP_TRUNC, ST_N };

typedef u32 (*process_fn)(void *, u32, const u8 *const *, const u32 *, const u32 *);  /* sw_process_v */
typedef const u32 *(*recs_fn)(void *);
typedef const u8 *(*data_fn)(void *);
typedef u32 (*dig_fn)(void *, const u64 **);
typedef void (*lock_fn)(void *);

typedef struct {
    int fd, kind, has_peer, fixed_peer;
    u32 num;
    u8 *ring; u32 ring_frame, ring_nr, ring_cur; size_t ring_bytes;  /* AF_PACKET TPACKET_V2 RX ring */
    struct sockaddr_storage peer; socklen_t peerlen;
    u64 rx, tx;
} port_t;

typedef struct pio {
    pthread_mutex_t mu;   /* the binding; held by the loop for a whole batch */
    pthread_mutex_t smu;  /* UDP peers (the loop learns them, Python's sends read them) */
    pthread_mutex_t qmu;  /* the queue to Python */
    port_t ports[PIO_MAX_PORTS]; u32 nports;
    int16_t idx[PIO_NPORTNUM];
    int cpu_port;
    int mode; void *sw; lock_fn lock, unlock; process_fn process; recs_fn recs; data_fn data; dig_fn digests;
    volatile int stop; int running;
    int efd, stopfd;
    volatile int flag_queue, flag_digest;
    u8 *q; u32 qhead, qtail, qcap;
    u8 *rbuf; u32 lens[PIO_BATCH], pnums[PIO_BATCH];
    const u8 *ptrs[PIO_BATCH];  /* the batch's frames: in rbuf's slots or, zero-copy, in an RX ring */
    struct mmsghdr rm[PIO_BATCH]; struct iovec riov[PIO_BATCH]; struct sockaddr_storage rname[PIO_BATCH];
    struct mmsghdr sm[PIO_BATCH]; struct iovec siov[PIO_BATCH];
    u64 st[ST_N];
} pio_t;

#define ST_ADD(io, k, n) __atomic_add_fetch(&(io)->st[k], (u64)(n), __ATOMIC_RELAXED)
static u64 now_ns(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return (u64)t.tv_sec * 1000000000ull + (u64)t.tv_nsec; }
static void signal_fd(int fd) { u64 one = 1; ssize_t r = write(fd, &one, sizeof one); (void)r; }

pio_t *pio_new(int cpu_port) {
    pio_t *io = calloc(1, sizeof(pio_t));
    if (!io) return NULL;
    io->rbuf = malloc((size_t)PIO_BATCH * PIO_SLOT);
    io->efd = eventfd(0, EFD_CLOEXEC);
    io->stopfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (!io->rbuf || io->efd < 0 || io->stopfd < 0) {
        free(io->rbuf); if (io->efd >= 0) close(io->efd); if (io->stopfd >= 0) close(io->stopfd); free(io); return NULL;
    }
    pthread_mutex_init(&io->mu, NULL); pthread_mutex_init(&io->smu, NULL); pthread_mutex_init(&io->qmu, NULL);
    for (int i = 0; i < PIO_NPORTNUM; i++) io->idx[i] = -1;
    io->cpu_port = cpu_port;
    for (int i = 0; i < PIO_BATCH; i++) {
        io->riov[i].iov_base = io->rbuf + (size_t)i * PIO_SLOT; io->riov[i].iov_len = PIO_SLOT;
        io->rm[i].msg_hdr.msg_iov = &io->riov[i]; io->rm[i].msg_hdr.msg_iovlen = 1;
        io->rm[i].msg_hdr.msg_name = &io->rname[i];
        io->sm[i].msg_hdr.msg_iov = &io->siov[i]; io->sm[i].msg_hdr.msg_iovlen = 1;
    }
    return io;
}

void pio_free(pio_t *io) {
    if (!io) return;
    for (u32 i = 0; i < io->nports; i++) if (io->ports[i].ring) munmap(io->ports[i].ring, io->ports[i].ring_bytes);
    close(io->efd); close(io->stopfd);
    pthread_mutex_destroy(&io->mu); pthread_mutex_destroy(&io->smu); pthread_mutex_destroy(&io->qmu);
    free(io->q); free(io->rbuf); free(io);
}

/* kind: 0 UDP, 1 AF_PACKET. Returns the port's index, -1 when full or the number is bad. */
int pio_add_port(pio_t *io, int fd, u32 num, int kind) {
    if (io->nports >= PIO_MAX_PORTS || num >= PIO_NPORTNUM || io->idx[num] >= 0) return -1;
    port_t *p = &io->ports[io->nports];
    memset(p, 0, sizeof *p);
    p->fd = fd; p->num = num; p->kind = kind;
    io->idx[num] = (int16_t)io->nports;
    if (kind == KIND_PACKET) {  /* room for bursts (as the reflector ceiling has) */
        int buf = 4 << 20;
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf);
    }
    return (int)io->nports++;
}

/* Receive on AF_PACKET port num through a TPACKET_V2 ring (no syscall and no kernel copy
   per frame; per-frame status, so no block timer adds latency) sized for frames up to
   mtu + 14 bytes (>= 512 of them). Returns 0, or -errno (the port keeps recvmmsg). Before pio_run only. */
int pio_ring(pio_t *io, u32 num, u32 mtu) {
    if (num >= PIO_NPORTNUM || io->idx[num] < 0) return -EINVAL;
    port_t *p = &io->ports[io->idx[num]];
    if (p->kind != KIND_PACKET) return -EINVAL;
    u32 need = TPACKET_ALIGN(TPACKET2_HDRLEN) + 16 + mtu + 14, frame = 2048;
    while (frame < need) frame *= 2;
    u32 block = frame > (1u << 16) ? frame : (1u << 16), per = block / frame, nblocks = (512 + per - 1) / per;
    int ver = TPACKET_V2;
    if (setsockopt(p->fd, SOL_PACKET, PACKET_VERSION, &ver, sizeof ver) < 0) return -errno;
    struct tpacket_req req = {block, nblocks, frame, (block / frame) * nblocks};
    if (setsockopt(p->fd, SOL_PACKET, PACKET_RX_RING, &req, sizeof req) < 0) {
        int e = errno; ver = TPACKET_V1; setsockopt(p->fd, SOL_PACKET, PACKET_VERSION, &ver, sizeof ver); return -e;
    }
    size_t bytes = (size_t)block * nblocks;
    void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, p->fd, 0);
    if (m == MAP_FAILED) {
        int e = errno; struct tpacket_req none = {0};
        setsockopt(p->fd, SOL_PACKET, PACKET_RX_RING, &none, sizeof none);
        ver = TPACKET_V1; setsockopt(p->fd, SOL_PACKET, PACKET_VERSION, &ver, sizeof ver); return -e;
    }
    p->ring = m; p->ring_bytes = bytes; p->ring_frame = frame; p->ring_nr = req.tp_frame_nr; p->ring_cur = 0;
    return 0;
}

/* A fixed (fixed != 0) or initial UDP peer: family 4 or 6, addr 4 or 16 bytes, port host order. */
int pio_set_peer(pio_t *io, u32 num, int family, const u8 *addr, u32 port, int fixed) {
    if (num >= PIO_NPORTNUM || io->idx[num] < 0) return -1;
    port_t *p = &io->ports[io->idx[num]];
    pthread_mutex_lock(&io->smu);
    memset(&p->peer, 0, sizeof p->peer);
    if (family == 4) {
        struct sockaddr_in *a = (struct sockaddr_in *)&p->peer;
        a->sin_family = AF_INET; a->sin_port = htons((uint16_t)port); memcpy(&a->sin_addr, addr, 4); p->peerlen = sizeof *a;
    } else {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&p->peer;
        a->sin6_family = AF_INET6; a->sin6_port = htons((uint16_t)port); memcpy(&a->sin6_addr, addr, 16); p->peerlen = sizeof *a;
    }
    p->has_peer = 1; p->fixed_peer = fixed;
    pthread_mutex_unlock(&io->smu);
    return 0;
}

/* The current UDP peer of port num into addr (16 bytes) and *port; returns 4, 6, or 0 (none). */
int pio_get_peer(pio_t *io, u32 num, u8 *addr, u32 *port) {
    if (num >= PIO_NPORTNUM || io->idx[num] < 0) return 0;
    port_t *p = &io->ports[io->idx[num]];
    int fam = 0;
    pthread_mutex_lock(&io->smu);
    if (p->has_peer && p->peer.ss_family == AF_INET) {
        struct sockaddr_in *a = (struct sockaddr_in *)&p->peer; memcpy(addr, &a->sin_addr, 4); *port = ntohs(a->sin_port); fam = 4;
    } else if (p->has_peer && p->peer.ss_family == AF_INET6) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&p->peer; memcpy(addr, &a->sin6_addr, 16); *port = ntohs(a->sin6_port); fam = 6;
    }
    pthread_mutex_unlock(&io->smu);
    return fam;
}

/* Swap the pipeline the loop runs (mode 2) or say there is none (0: drop) or a Python one (1). */
void pio_bind(pio_t *io, int mode, void *sw, void *lock, void *unlock, void *process, void *recs, void *data,
              void *digests) {
    pthread_mutex_lock(&io->mu);
    io->mode = mode; io->sw = sw;
    io->lock = (lock_fn)lock; io->unlock = (lock_fn)unlock; io->process = (process_fn)process;
    io->recs = (recs_fn)recs; io->data = (data_fn)data; io->digests = (dig_fn)digests;
    pthread_mutex_unlock(&io->mu);
}

/* ------------------------------------------------------------------ queue to Python */
static void q_push(pio_t *io, u32 kind, u32 port, const u8 *data, u32 len) {
    u32 need = 12 + len;
    pthread_mutex_lock(&io->qmu);
    if (io->qtail + need > io->qcap) {
        if (io->qhead) { memmove(io->q, io->q + io->qhead, io->qtail - io->qhead); io->qtail -= io->qhead; io->qhead = 0; }
        if (io->qtail + need > io->qcap) {
            u32 nc = io->qcap ? io->qcap : (1u << 20);
            while (nc < io->qtail + need) nc *= 2;
            if (nc > PIO_QUEUE_MAX) { ST_ADD(io, ST_DROP_QUEUE, 1); pthread_mutex_unlock(&io->qmu); return; }
            u8 *nq = realloc(io->q, nc);
            if (!nq) { ST_ADD(io, ST_DROP_QUEUE, 1); pthread_mutex_unlock(&io->qmu); return; }
            io->q = nq; io->qcap = nc;
        }
    }
    u32 hdr[3] = {kind, port, len};
    memcpy(io->q + io->qtail, hdr, 12); memcpy(io->q + io->qtail + 12, data, len); io->qtail += need;
    ST_ADD(io, ST_TO_PY, 1);
    int was = io->flag_queue; io->flag_queue = 1;
    pthread_mutex_unlock(&io->qmu);
    if (!was) signal_fd(io->efd);
}

/* The oldest queued frame into buf: its length, -1 when the queue is empty, -2 when cap is too small. */
int pio_pop(pio_t *io, u8 *buf, u32 cap, u32 *kind, u32 *port) {
    pthread_mutex_lock(&io->qmu);
    if (io->qhead == io->qtail) { io->qhead = io->qtail = 0; io->flag_queue = 0; pthread_mutex_unlock(&io->qmu); return -1; }
    u32 hdr[3]; memcpy(hdr, io->q + io->qhead, 12);
    if (hdr[2] > cap) { pthread_mutex_unlock(&io->qmu); return -2; }
    memcpy(buf, io->q + io->qhead + 12, hdr[2]); io->qhead += 12 + hdr[2];
    pthread_mutex_unlock(&io->qmu);
    *kind = hdr[0]; *port = hdr[1];
    return (int)hdr[2];
}

/* Block until the loop has something for Python (1), or it was stopped (0). */
int pio_wait(pio_t *io) {
    u64 v;
    while (!io->stop) {
        ssize_t r = read(io->efd, &v, sizeof v);
        if (r == sizeof v) return io->stop ? 0 : 1;
        if (r < 0 && errno != EINTR) return 0;
    }
    return 0;
}
/* 1 (and clears the flag) when the pipeline queued digests since the last call. */
int pio_take_digest_flag(pio_t *io) { int f = __atomic_exchange_n(&io->flag_digest, 0, __ATOMIC_ACQ_REL); return f; }

/* ------------------------------------------------------------------ sending */
static int wait_writable(int fd) { struct pollfd p = {fd, POLLOUT, 0}; return poll(&p, 1, 10) > 0; }

static void send_batch(pio_t *io, port_t *p, u32 n) {
    u32 i = 0;
    if (p->kind == KIND_UDP) {
        pthread_mutex_lock(&io->smu);
        int has = p->has_peer; struct sockaddr_storage peer = p->peer; socklen_t plen = p->peerlen;
        pthread_mutex_unlock(&io->smu);
        if (!has) { ST_ADD(io, ST_DROP_NOPEER, n); return; }
        for (u32 k = 0; k < n; k++) { io->sm[k].msg_hdr.msg_name = &peer; io->sm[k].msg_hdr.msg_namelen = plen; }
    } else {
        for (u32 k = 0; k < n; k++) { io->sm[k].msg_hdr.msg_name = NULL; io->sm[k].msg_hdr.msg_namelen = 0; }
    }
    int retried = 0;
    while (i < n) {
        int r = sendmmsg(p->fd, io->sm + i, n - i, MSG_DONTWAIT);
        if (r > 0) { i += (u32)r; __atomic_add_fetch(&p->tx, (u32)r, __ATOMIC_RELAXED); ST_ADD(io, ST_TX, r); retried = 0; continue; }
        if (r < 0 && (errno == EAGAIN || errno == ENOBUFS) && !retried && wait_writable(p->fd)) { retried = 1; continue; }
        if (r < 0 && errno == EINTR) continue;
        ST_ADD(io, ST_DROP_SEND, 1); i++; retried = 0; /* this frame failed (as the Python path: dropped) */
    }
}

/* Frames from Python (PacketOut results, the slow path's outputs): one at a time. */
int pio_send(pio_t *io, u32 num, const u8 *data, u32 len) {
    if (num >= PIO_NPORTNUM || io->idx[num] < 0) { ST_ADD(io, ST_DROP_NOPORT, 1); return -1; }
    port_t *p = &io->ports[io->idx[num]];
    struct sockaddr_storage peer; socklen_t plen = 0;
    if (p->kind == KIND_UDP) {
        pthread_mutex_lock(&io->smu);
        int has = p->has_peer; peer = p->peer; plen = p->peerlen;
        pthread_mutex_unlock(&io->smu);
        if (!has) { ST_ADD(io, ST_DROP_NOPEER, 1); return -1; }
    }
    for (int tries = 0; tries < 2; tries++) {
        ssize_t r = p->kind == KIND_UDP ? sendto(p->fd, data, len, MSG_DONTWAIT, (struct sockaddr *)&peer, plen)
                                        : send(p->fd, data, len, MSG_DONTWAIT);
        if (r >= 0) { __atomic_add_fetch(&p->tx, 1, __ATOMIC_RELAXED); ST_ADD(io, ST_TX, 1); return 0; }
        if (!(errno == EAGAIN || errno == ENOBUFS) || !wait_writable(p->fd)) break;
    }
    ST_ADD(io, ST_DROP_SEND, 1);
    return -1;
}

/* ------------------------------------------------------------------ the loop */
static void run_native(pio_t *io, u32 n, u64 t0) {
    u64 t1 = now_ns();
    io->lock(io->sw);
    u64 t2 = now_ns();
    u32 no = io->process(io->sw, n, io->ptrs, io->lens, io->pnums);
    u64 t3 = now_ns();
    const u32 *rec = no ? io->recs(io->sw) : NULL;
    const u8 *data = no ? io->data(io->sw) : NULL;
    /* per port, in order: one sendmmsg per run of outputs (ports rarely interleave) */
    u32 done = 0;
    while (done < no) {
        u32 port = rec[3 * done];
        if ((int)port == io->cpu_port) { q_push(io, Q_CPU, port, data + rec[3 * done + 1], rec[3 * done + 2]); done++; continue; }
        if (port >= PIO_NPORTNUM || io->idx[port] < 0) { ST_ADD(io, ST_DROP_NOPORT, 1); done++; continue; }
        port_t *p = &io->ports[io->idx[port]];
        u32 k = 0;
        while (done < no && k < PIO_BATCH && rec[3 * done] == port) {
            io->siov[k].iov_base = (void *)(data + rec[3 * done + 1]); io->siov[k].iov_len = rec[3 * done + 2];
            k++; done++;
        }
        send_batch(io, p, k);
    }
    const u64 *dq;
    if (io->digests(io->sw, &dq) && !__atomic_exchange_n(&io->flag_digest, 1, __ATOMIC_ACQ_REL)) signal_fd(io->efd);
    io->unlock(io->sw);
    u64 t4 = now_ns();
    ST_ADD(io, ST_NS_RECV, t1 - t0); ST_ADD(io, ST_NS_LOCK, t2 - t1); ST_ADD(io, ST_NS_PROC, t3 - t2); ST_ADD(io, ST_NS_SEND, t4 - t3);
}

static void run_batch(pio_t *io, u32 n, u64 t0);

/* Up to PIO_BATCH frames from the RX ring, processed where the kernel put them (no copy);
   their ring slots go back to the kernel after the batch. */
static void handle_ring(pio_t *io, port_t *p) {
    u64 t0 = now_ns();
    u32 n = 0, seen = 0, first = p->ring_cur;
    while (n < PIO_BATCH && seen < p->ring_nr) {
        struct tpacket2_hdr *h = (struct tpacket2_hdr *)(p->ring + (size_t)p->ring_cur * p->ring_frame);
        if (!(__atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE) & TP_STATUS_USER)) break;
        struct sockaddr_ll *ll = (struct sockaddr_ll *)((u8 *)h + TPACKET_ALIGN(sizeof(struct tpacket2_hdr)));
        u32 len = h->tp_snaplen;
        if (len != h->tp_len) ST_ADD(io, ST_DROP_TRUNC, 1);  /* longer than the ring's frames */
        else if (ll->sll_pkttype != PACKET_OUTGOING) {
            io->ptrs[n] = (u8 *)h + h->tp_mac; io->lens[n] = len; io->pnums[n] = p->num; n++;
        }
        p->ring_cur = (p->ring_cur + 1) % p->ring_nr; seen++;
    }
    p->rx += n; ST_ADD(io, ST_RX, n); ST_ADD(io, ST_BATCHES, 1);
    if (n) run_batch(io, n, t0);
    for (u32 i = 0, k = first; i < seen; i++, k = (k + 1) % p->ring_nr) {
        struct tpacket2_hdr *h = (struct tpacket2_hdr *)(p->ring + (size_t)k * p->ring_frame);
        __atomic_store_n(&h->tp_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
    }
}

static int same_sender(pio_t *io, int a, int b) {
    socklen_t la = io->rm[a].msg_hdr.msg_namelen;
    return la == io->rm[b].msg_hdr.msg_namelen && memcmp(&io->rname[a], &io->rname[b], la) == 0;
}

static void learn_peer(pio_t *io, port_t *p, int i) {
    pthread_mutex_lock(&io->smu);
    memcpy(&p->peer, &io->rname[i], io->rm[i].msg_hdr.msg_namelen);
    p->peerlen = io->rm[i].msg_hdr.msg_namelen; p->has_peer = 1;
    pthread_mutex_unlock(&io->smu);
}

static void handle_port(pio_t *io, port_t *p) {
    if (p->ring) { handle_ring(io, p); return; }
    u64 t0 = now_ns();
    for (int i = 0; i < PIO_BATCH; i++) io->rm[i].msg_hdr.msg_namelen = sizeof(struct sockaddr_storage);
    int r = recvmmsg(p->fd, io->rm, PIO_BATCH, MSG_DONTWAIT, NULL);
    if (r <= 0) return;  /* EAGAIN, or an error such as ENETDOWN: epoll reports the port again if it must */
    /* A UDP port's peer is the sender of the latest datagram, as on the Python loop: a batch
       with several senders runs as consecutive sub-batches, one per run of the same sender, and
       each sub-batch first learns its sender, so every output goes where it would one at a time. */
    u32 n = 0; int last = -1;
    for (int i = 0; i < r; i++) {
        u32 len = io->rm[i].msg_len;
        if (p->kind == KIND_PACKET) {
            struct sockaddr_ll *ll = (struct sockaddr_ll *)&io->rname[i];
            if (ll->sll_pkttype == PACKET_OUTGOING) continue;  /* our own output (old kernels) */
        } else if (!p->fixed_peer) {
            if (last >= 0 && !same_sender(io, last, i)) {
                learn_peer(io, p, last);
                p->rx += n; ST_ADD(io, ST_RX, n);
                run_batch(io, n, t0);
                n = 0; t0 = now_ns();
            }
            last = i;
        }
        if (len > PIO_SLOT) len = PIO_SLOT;
        io->ptrs[n] = io->rbuf + (size_t)i * PIO_SLOT; io->lens[n] = len; io->pnums[n] = p->num; n++;
    }
    if (last >= 0) learn_peer(io, p, last);
    p->rx += n; ST_ADD(io, ST_RX, n); ST_ADD(io, ST_BATCHES, 1);
    if (n) run_batch(io, n, t0);
}

static void run_batch(pio_t *io, u32 n, u64 t0) {
    pthread_mutex_lock(&io->mu);
    if (io->mode == MODE_NATIVE) {
        run_native(io, n, t0);
    } else if (io->mode == MODE_PYTHON) {
        for (u32 i = 0; i < n; i++) q_push(io, Q_RX, io->pnums[i], io->ptrs[i], io->lens[i]);
    } else {
        ST_ADD(io, ST_DROP_UNBOUND, n);
    }
    pthread_mutex_unlock(&io->mu);
}

/* The datapath loop; returns 0 after pio_stop, -1 when epoll fails. Runs on one thread. */
int pio_run(pio_t *io) {
    int ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0) return -1;
    struct epoll_event ev = {0};
    for (u32 i = 0; i < io->nports; i++) {
        ev.events = EPOLLIN; ev.data.u32 = i;
        if (epoll_ctl(ep, EPOLL_CTL_ADD, io->ports[i].fd, &ev) < 0) { close(ep); return -1; }
    }
    ev.events = EPOLLIN; ev.data.u32 = PIO_MAX_PORTS;
    epoll_ctl(ep, EPOLL_CTL_ADD, io->stopfd, &ev);
    struct epoll_event evs[PIO_MAX_PORTS + 1];
    io->running = 1;
    while (!io->stop) {
        /* ports in the order epoll reports them: the order frames became ready (as the
           Python loop's selector), so a frame that teaches a UDP peer is run first */
        u64 w0 = now_ns();
        int k = epoll_wait(ep, evs, PIO_MAX_PORTS + 1, PIO_POLL_MS);
        ST_ADD(io, ST_NS_WAIT, now_ns() - w0); ST_ADD(io, ST_WAKEUPS, 1);
        for (int j = 0; j < k && !io->stop; j++) {
            if (evs[j].data.u32 >= io->nports) continue;
            port_t *p = &io->ports[evs[j].data.u32];
            if (evs[j].events & EPOLLERR) {  /* e.g. ENETDOWN when the link went down: reading it clears it
                                                (a ring port never reads it, and epoll would report it forever) */
                int e = 0; socklen_t l = sizeof e;
                getsockopt(p->fd, SOL_SOCKET, SO_ERROR, &e, &l);
            }
            handle_port(io, p);
        }
    }
    io->running = 0;
    close(ep);
    return 0;
}

/* Ask the loop and pio_wait to return (within PIO_POLL_MS; at once through the eventfds). */
void pio_stop(pio_t *io) {
    io->stop = 1;
    signal_fd(io->stopfd);
    signal_fd(io->efd);
}

void pio_stats(pio_t *io, u64 *out, u32 n) { for (u32 i = 0; i < n && i < ST_N; i++) out[i] = __atomic_load_n(&io->st[i], __ATOMIC_RELAXED); }
/* Received and sent frames of port num (0, 0 when unknown). */
void pio_port_stats(pio_t *io, u32 num, u64 *rx, u64 *tx) {
    *rx = *tx = 0;
    if (num < PIO_NPORTNUM && io->idx[num] >= 0) { *rx = io->ports[io->idx[num]].rx; *tx = io->ports[io->idx[num]].tx; }
}
