/*
 * Streaming pack/unpack of user buffers at signature-byte offsets.
 */
#include "coll_bufpool_pack.h"

#include <limits.h>
#include <string.h>

#include "opal/datatype/opal_convertor.h"

void bufpool_view_init(bufpool_view_t *view, const void *buf, size_t count,
                       struct ompi_datatype_t *dtype)
{
    ptrdiff_t lb, true_lb, true_extent;

    ompi_datatype_type_size(dtype, &view->type_size);
    ompi_datatype_get_extent(dtype, &lb, &view->extent);
    ompi_datatype_get_true_extent(dtype, &true_lb, &true_extent);
    view->buf = (char *)buf;
    view->count = count;
    view->dtype = dtype;
    view->bytes = view->type_size * count;
    /* The layout test only distinguishes one element from several. */
    int32_t probe = count > 1 ? 2 : 1;
    view->contig =
        ompi_datatype_is_contiguous_memory_layout(dtype, probe) ? (char *)buf + true_lb : NULL;
}

void bufpool_view_sub(bufpool_view_t *sub, const bufpool_view_t *view, size_t first, size_t n)
{
    bufpool_view_init(sub, view->buf + (ptrdiff_t)first * view->extent, n, view->dtype);
}

/* A piece of len plain bytes at ptr. */
static void bytes_piece(bufpool_piece_t *piece, void *ptr, size_t len)
{
    piece->ptr = ptr;
    piece->count = len;
    piece->dtype = MPI_BYTE;
}

bool bufpool_view_direct(const bufpool_view_t *view, size_t off, size_t len, bufpool_piece_t *piece)
{
    if (NULL != view->contig && len <= (size_t)INT_MAX) {
        bytes_piece(piece, view->contig + off, len);
        return true;
    }
    const size_t ts = view->type_size;
    if (0 != ts && 0 == off % ts && 0 == len % ts && len / ts <= (size_t)INT_MAX) {
        piece->ptr = view->buf + (ptrdiff_t)(off / ts) * view->extent;
        piece->count = len / ts;
        piece->dtype = view->dtype;
        return true;
    }
    return false;
}

bool bufpool_view_all_direct(const bufpool_view_t *view, size_t seg)
{
    if (NULL != view->contig) {
        return true;
    }
    /* Pieces start at multiples of seg and the last one ends at the end of
     * the buffer, which is an element boundary. */
    return 0 != view->type_size && 0 == seg % view->type_size;
}

/* Larger than any predefined element (long double complex: 32 bytes). */
#define EDGE_BYTES 64

/* A send convertor only stops on predefined-element boundaries: it
 * positions itself at or before off and packs whole elements.  Pieces cut
 * on signature bytes may start or end inside an element, so the elements
 * at the edges are packed into a small buffer and only their wanted bytes
 * copied out. */
static int pack_range(opal_convertor_t *conv, size_t off, size_t len, char *mem)
{
    const size_t end = off + len;
    size_t pos = off;
    bool edge = false;

    if (OPAL_SUCCESS != opal_convertor_set_position(conv, &pos) || pos > off) {
        return OMPI_ERROR;
    }
    while (pos < end) {
        char tmp[EDGE_BYTES];
        struct iovec iov;
        uint32_t iov_count = 1;
        size_t got;

        edge = edge || pos < off;
        if (edge) {
            iov.iov_base = tmp;
            iov.iov_len = sizeof(tmp);
        } else {
            iov.iov_base = mem + (pos - off);
            iov.iov_len = end - pos;
        }
        got = iov.iov_len;
        if (opal_convertor_pack(conv, &iov, &iov_count, &got) < 0) {
            return OMPI_ERROR;
        }
        if (edge) {
            if (0 == got) {
                return OMPI_ERROR; /* past the end of the data */
            }
            /* Keep the part of [pos, pos + got) inside [off, end). */
            size_t lo = pos > off ? pos : off, hi = pos + got < end ? pos + got : end;
            if (lo < hi) {
                memcpy(mem + (lo - off), tmp + (lo - pos), hi - lo);
            }
            edge = false;
        } else if (0 == got) {
            edge = true; /* the last element straddles end */
        }
        pos += got;
    }
    return OMPI_SUCCESS;
}

static int view_convert(const bufpool_view_t *view, size_t off, size_t len, void *mem, bool pack)
{
    if (0 == len) {
        return OMPI_SUCCESS;
    }
    if (off > view->bytes || len > view->bytes - off) {
        return OMPI_ERR_BAD_PARAM;
    }
    if (NULL != view->contig) {
        if (pack) {
            memcpy(mem, view->contig + off, len);
        } else {
            memcpy(view->contig + off, mem, len);
        }
        return OMPI_SUCCESS;
    }

    /* A convertor does the rest.  A receive convertor can be positioned
     * anywhere, even inside an element (ob1 relies on it for fragments). */
    opal_convertor_t conv;
    int rc;

    OBJ_CONSTRUCT(&conv, opal_convertor_t);
    if (pack) {
        rc = opal_convertor_copy_and_prepare_for_send(ompi_mpi_local_convertor, &view->dtype->super,
                                                      view->count, view->buf, 0, &conv);
        if (OPAL_SUCCESS == rc) {
            rc = pack_range(&conv, off, len, mem);
        }
    } else {
        struct iovec iov = {.iov_base = mem, .iov_len = len};
        uint32_t iov_count = 1;
        size_t max_data = len, position = off;

        rc = opal_convertor_copy_and_prepare_for_recv(ompi_mpi_local_convertor, &view->dtype->super,
                                                      view->count, view->buf, 0, &conv);
        if (OPAL_SUCCESS == rc) {
            rc = opal_convertor_set_position(&conv, &position);
        }
        if (OPAL_SUCCESS == rc && position != off) {
            rc = OMPI_ERROR;
        }
        if (OPAL_SUCCESS == rc) {
            /* 1: the whole buffer is done, 0: more remains; both are fine. */
            rc = opal_convertor_unpack(&conv, &iov, &iov_count, &max_data) < 0 || max_data != len
                     ? OMPI_ERROR
                     : OMPI_SUCCESS;
        }
    }
    OBJ_DESTRUCT(&conv);
    return OPAL_SUCCESS == rc ? OMPI_SUCCESS : OMPI_ERROR;
}

int bufpool_view_pack(const bufpool_view_t *view, size_t off, size_t len, void *mem)
{
    return view_convert(view, off, len, mem, true);
}

int bufpool_view_unpack(const bufpool_view_t *view, size_t off, size_t len, const void *mem)
{
    return view_convert(view, off, len, (void *)mem, false);
}

/* The piece in place where bufpool_view_direct allows it, else as plain
 * bytes in bounce.  Returns whether it is in bounce. */
static bool view_piece(const bufpool_view_t *view, size_t off, size_t len, void *bounce,
                       bufpool_piece_t *piece)
{
    if (bufpool_view_direct(view, off, len, piece)) {
        return false;
    }
    bytes_piece(piece, bounce, len);
    return true;
}

int bufpool_view_send_piece(const bufpool_view_t *view, size_t off, size_t len, void *bounce,
                            bufpool_piece_t *piece)
{
    /* Through the bounce buffer, the piece is packed there first. */
    return view_piece(view, off, len, bounce, piece) ? bufpool_view_pack(view, off, len, bounce)
                                                     : OMPI_SUCCESS;
}

bool bufpool_view_recv_piece(const bufpool_view_t *view, size_t off, size_t len, void *bounce,
                             bufpool_piece_t *piece)
{
    return view_piece(view, off, len, bounce, piece);
}

int bufpool_local_copy(void *dst, size_t dcount, struct ompi_datatype_t *ddtype, const void *src,
                       size_t scount, struct ompi_datatype_t *sdtype, size_t seg_bytes)
{
    if (ddtype == sdtype && dcount == scount) {
        return bufpool_copy(dst, src, scount, sdtype);
    }
    bufpool_view_t d, s;
    bufpool_view_init(&d, dst, dcount, ddtype);
    bufpool_view_init(&s, src, scount, sdtype);
    return bufpool_view_copy(&d, &s, seg_bytes);
}

int bufpool_view_copy(const bufpool_view_t *dst, const bufpool_view_t *src, size_t seg_bytes)
{
    const size_t bytes = src->bytes < dst->bytes ? src->bytes : dst->bytes;

    if (0 == bytes) {
        return src->bytes == dst->bytes ? OMPI_SUCCESS : MPI_ERR_TRUNCATE;
    }
    if (src->bytes > dst->bytes) {
        return MPI_ERR_TRUNCATE;
    }
    if (NULL != src->contig && NULL != dst->contig) {
        if (src->contig != dst->contig) {
            memmove(dst->contig, src->contig, bytes);
        }
        return OMPI_SUCCESS;
    }
    if (src->dtype == dst->dtype && src->count == dst->count) {
        return bufpool_copy(dst->buf, src->buf, src->count, src->dtype);
    }
    /* Only one side is contiguous: the convertor of the other moves the
     * bytes straight between the two buffers. */
    if (NULL != src->contig) {
        return bufpool_view_unpack(dst, 0, bytes, src->contig);
    }
    if (NULL != dst->contig) {
        return bufpool_view_pack(src, 0, bytes, dst->contig);
    }
    /* Two different non-contiguous layouts: one pooled segment at a time. */
    const size_t seg = seg_bytes < bytes ? seg_bytes : bytes;
    bufpool_slots_t slots;
    int rc = bufpool_slots_get(&slots, 1, seg, 0);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    char *mem = bufpool_slot(&slots, 0);
    for (size_t off = 0; off < bytes && OMPI_SUCCESS == rc; off += seg) {
        size_t len = bytes - off < seg ? bytes - off : seg;
        rc = bufpool_view_pack(src, off, len, mem);
        if (OMPI_SUCCESS == rc) {
            rc = bufpool_view_unpack(dst, off, len, mem);
        }
    }
    bufpool_slots_put(&slots);
    return rc;
}

static int linear_copy_own(const bufpool_linear_xchg_t *x)
{
    if (NULL == x->own) {
        return OMPI_SUCCESS;
    }
    return bufpool_local_copy(x->rbuf + x->rank * x->rstride, x->rcount, x->rdtype, x->own,
                              x->own_count, x->own_dtype, x->seg_bytes);
}

int bufpool_linear_exchange(const bufpool_linear_xchg_t *x, bufpool_comm_state_t *state,
                            struct ompi_communicator_t *comm)
{
    bufpool_reqs_t reqs;
    int rc = OMPI_SUCCESS;

    bufpool_reqs_init(&reqs, state, comm);
    bufpool_reqs_bound(&reqs, x->max_requests);
    /* Unbounded (or within the bound): every receive first, then every
     * send.  Bounded below 2 (p - 1): receive k and send k in turn. */
    const bool interleave = x->max_requests > 0 && (size_t)x->max_requests < 2 * (size_t)(x->p - 1);
    for (int k = 1, s = 1; (k < x->p || s < x->p) && OMPI_SUCCESS == rc;) {
        if (k < x->p && (!interleave || k <= s)) {
            int from = (x->rank - k + x->p) % x->p;
            rc = bufpool_reqs_recv(&reqs, x->rbuf + from * x->rstride, x->rcount, x->rdtype, from,
                                   x->tag);
            k++;
        } else {
            int to = (x->rank + s) % x->p;
            rc = bufpool_reqs_send_small_now(&reqs, x->sbuf + to * x->sstride, x->scount, x->sdtype,
                                             x->bytes, to, x->tag);
            s++;
        }
    }
    const bool overlap = x->bytes <= BUFPOOL_OVERLAP_COPY_MAX;
    if (OMPI_SUCCESS == rc && overlap) {
        rc = linear_copy_own(x);
    }
    rc = bufpool_reqs_finish(&reqs, rc);
    return OMPI_SUCCESS == rc && !overlap ? linear_copy_own(x) : rc;
}
