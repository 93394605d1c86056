/*
 * tokenmill._kernels: the sequential loops of index building that numpy cannot vectorise exactly, and
 * the proof's scan of every text, in plain C over buffers (numpy arrays passed through the buffer
 * protocol) and CPython's own str storage.
 *
 * sample_index(sizes:int32[], document_index:int32[], seq_length, num_samples, extra,
 *              out:int32[] or int64[] of (num_samples + 1) * 2)
 *     Megatron's sample index walk (docs/algorithms.md §2): row k = (position in document_index,
 *     offset) where sample k starts; O(len(document_index) + num_samples).
 *
 * blending_index(weights:float64[], size, dataset_index:int16[size], dataset_sample_index:int64[size])
 *     Greedy error minimisation (docs/algorithms.md §4): at step s, pick the dataset j maximising
 *     weights[j] * max(s, 1) - count[j] (strict >, ties go to the lowest j). O(size * datasets).
 *
 * exhaustive_blending_index(sizes:int64[], dataset_index:int16[], dataset_sample_index:int64[])
 *     The same rule with weights sizes[j] / total over the datasets not yet spent, until every
 *     dataset has given sizes[j] samples; the outputs hold sum(sizes) entries.
 *
 * best_fit_bins(lengths:int64[], capacity, bins:int64[len(lengths)]) -> number of bins
 *     Optimized Best-Fit Decreasing (Ding et al. 2024, App. B; tokenmill.best_fit.obfd): documents in the
 *     order given (longest first), each into the open bin whose remaining capacity is the smallest that
 *     still holds it, of those the one that came to that capacity first (a FIFO queue per capacity, as
 *     OLMo-core's; not the first opened), else a new bin; bins[i] = document i's
 *     bin, numbered as opened. A max segment tree over the remaining capacities 1..capacity finds that
 *     capacity in O(log capacity): O(len(lengths) * log capacity) in all, O(capacity + bins) memory.
 *
 * Arithmetic follows Megatron's helpers.cpp step for step (doubles, the same comparisons), so the
 * outputs are identical, not merely equivalent.
 *
 * first_risky_code_points(texts:list[str], positions:int64[len(texts)], widths:uint8[len(texts)])
 *     The proof's search for where engines are likeliest to differ (tokenmill.tokenization.proof): positions[i] = the
 *     index of the first code point of texts[i] outside the BMP or in a combining-mark block, else -1;
 *     widths[i] = the bytes per code point CPython stores texts[i] in (1, 2 or 4). A text of 1 byte each
 *     holds neither kind and is not read; the others are read once, up to their first such code point,
 *     with the GIL released. O(characters of the texts of 2 or 4 bytes each).
 *
 * spell_tokens(ids:int64[n], lengths:int64[V], starts:int64[V], table:uint8[], text:uint8[],
 *              token_ends:int64[T+1], text_ends:int64[T+1], byte_ends:int64[n+1], spelled:uint8[T])
 *     Whether each of T texts' ids spell its UTF-8 bytes exactly (tokenmill.tokenization.chat_template's byte
 *     table: id i spells table[starts[i] : starts[i] + lengths[i]], lengths[i] < 0 for an id that spells no
 *     bytes): text k's bytes are text[text_ends[k] : text_ends[k+1]], its ids ids[token_ends[k] :
 *     token_ends[k+1]]. spelled[k] = 1 where they match; byte_ends[i+1] = byte_ends[i] + the bytes id i spells
 *     (0 for none; byte_ends[0] = 0), so a spelled text's tokens lie at byte_ends[token_ends[k]] onwards exactly as
 *     its bytes do. One pass over the tokens and bytes, the GIL released.
 *
 * eod_appended_cast(tokens:uint32[], lengths:int64[], eod_id, out:uint8/16/32[len(tokens) + len(lengths)],
 *                   out_lengths:int64[len(lengths)], eod_in_text:int64[len(lengths)])
 *         -> (tokens written, documents that kept their own EOD, EOD ids in tokens)
 *     A pack batch's last step (tokenmill.pack.batches): each document's ids cast to the output width (modulo,
 *     as numpy's astype), then eod_id after each document whose ids do not already end with it;
 *     out_lengths[i] = its length then, eod_in_text lists (ascending) the documents that kept their own
 *     EOD. eod_id < 0: none appended (a cast). One pass, the GIL released: the numpy steps it replaces
 *     (a comparison, a count, np.insert, astype) read the batch five times.
 *
 * json_texts(block:bytes, starts:int64[n], lengths:int64[n], key:bytes, out:uint8[sum(lengths) + 8],
 *            offsets:int64[n+1]) -> bool
 *     A batch of JSONL lines' string values of one top-level key, unescaped into out (text i at
 *     out[offsets[i]:offsets[i+1]]), True; or False where it is not sure of a line (the grammar it accepts is at
 *     the function: a good verdict implies orjson accepts every line and gives the same texts). One pass, the GIL
 *     released (tokenmill.inputs.utf8_texts).
 *
 * utf8_facts(data:uint8[], offsets:int64[n+1], characters:int64[n], first_risky:int64[n], widths:uint8[n])
 *     For valid UTF-8 texts, what len() and first_risky_code_points give for their strs (tokenmill.inputs.utf8_texts).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int get_buffer(PyObject *object, Py_buffer *view, Py_ssize_t itemsize, int writable, const char *name) {
    if (PyObject_GetBuffer(object, view, PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0)) < 0) return -1;
    if (view->itemsize != itemsize) {
        PyErr_Format(PyExc_TypeError, "%s: expected %zd-byte items, got %zd", name, itemsize, view->itemsize);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

static PyObject *sample_index(PyObject *self, PyObject *args) {
    PyObject *sizes_obj, *document_index_obj, *out_obj;
    long long seq_length, num_samples, extra;
    Py_buffer sizes_view, document_view, out_view;
    if (!PyArg_ParseTuple(args, "OOLLLO", &sizes_obj, &document_index_obj, &seq_length, &num_samples, &extra,
                          &out_obj))
        return NULL;
    if (get_buffer(sizes_obj, &sizes_view, 4, 0, "sizes") < 0) return NULL;
    if (get_buffer(document_index_obj, &document_view, 4, 0, "document_index") < 0) {
        PyBuffer_Release(&sizes_view);
        return NULL;
    }
    if (PyObject_GetBuffer(out_obj, &out_view, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) {
        PyBuffer_Release(&sizes_view);
        PyBuffer_Release(&document_view);
        return NULL;
    }
    const int32_t *sizes = sizes_view.buf;
    const int32_t *document_index = document_view.buf;
    int wide = out_view.itemsize == 8;  /* int64 rows, else int32 (Megatron picks by value range) */
    if (out_view.itemsize != 4 && !wide) {
        PyErr_SetString(PyExc_TypeError, "out: expected 4- or 8-byte items");
        goto fail;
    }
    Py_ssize_t num_documents = document_view.len / 4;
    Py_ssize_t num_sizes = sizes_view.len / 4;
    if (out_view.len / out_view.itemsize < 2 * (num_samples + 1) || num_documents == 0) {
        PyErr_SetString(PyExc_ValueError, "sample_index: output too small or no documents");
        goto fail;
    }
    for (Py_ssize_t i = 0; i < num_documents; i++) {
        if (document_index[i] < 0 || document_index[i] >= num_sizes) {
            PyErr_Format(PyExc_IndexError, "document_index[%zd] = %d is not a sequence id", i, document_index[i]);
            goto fail;
        }
    }
    Py_BEGIN_ALLOW_THREADS
    int64_t position = 0, offset = 0;
    int64_t *out64 = out_view.buf;
    int32_t *out32 = out_view.buf;
    if (wide) out64[0] = out64[1] = 0; else out32[0] = out32[1] = 0;
    for (int64_t k = 1; k <= num_samples; k++) {
        int64_t remaining = seq_length + extra;
        while (remaining != 0) {
            int64_t available = (int64_t)sizes[document_index[position]] - offset;
            remaining -= available;
            if (remaining <= 0) {  /* the sample ends inside this sequence */
                offset += remaining + available - extra;
                remaining = 0;
            } else if (position == num_documents - 1) {  /* out of data: only without drop-last */
                offset = (int64_t)sizes[document_index[position]] - extra;
                break;
            } else {
                position++;
                offset = 0;
            }
        }
        if (wide) {
            out64[2 * k] = position;
            out64[2 * k + 1] = offset;
        } else {
            out32[2 * k] = (int32_t)position;
            out32[2 * k + 1] = (int32_t)offset;
        }
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&sizes_view);
    PyBuffer_Release(&document_view);
    PyBuffer_Release(&out_view);
    Py_RETURN_NONE;
fail:
    PyBuffer_Release(&sizes_view);
    PyBuffer_Release(&document_view);
    PyBuffer_Release(&out_view);
    return NULL;
}

static PyObject *blending_index(PyObject *self, PyObject *args) {
    PyObject *weights_obj, *dataset_obj, *sample_obj;
    long long size;
    Py_buffer weights_view, dataset_view, sample_view;
    if (!PyArg_ParseTuple(args, "OLOO", &weights_obj, &size, &dataset_obj, &sample_obj)) return NULL;
    if (get_buffer(weights_obj, &weights_view, 8, 0, "weights") < 0) return NULL;
    if (get_buffer(dataset_obj, &dataset_view, 2, 1, "dataset_index") < 0) {
        PyBuffer_Release(&weights_view);
        return NULL;
    }
    if (get_buffer(sample_obj, &sample_view, 8, 1, "dataset_sample_index") < 0) {
        PyBuffer_Release(&weights_view);
        PyBuffer_Release(&dataset_view);
        return NULL;
    }
    Py_ssize_t num_datasets = weights_view.len / 8;
    const double *weights = weights_view.buf;
    int16_t *dataset_index = dataset_view.buf;
    int64_t *dataset_sample_index = sample_view.buf;
    int64_t *counts = calloc(num_datasets > 0 ? num_datasets : 1, sizeof(int64_t));
    if (dataset_view.len / 2 < size || sample_view.len / 8 < size || num_datasets == 0 || counts == NULL) {
        PyErr_SetString(PyExc_ValueError, "blending_index: outputs too small or no datasets");
        free(counts);
        PyBuffer_Release(&weights_view);
        PyBuffer_Release(&dataset_view);
        PyBuffer_Release(&sample_view);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    for (int64_t s = 0; s < size; s++) {
        double s_double = s > 1 ? (double)s : 1.0;
        Py_ssize_t best = 0;
        double best_error = weights[0] * s_double - (double)counts[0];
        for (Py_ssize_t j = 1; j < num_datasets; j++) {
            double error = weights[j] * s_double - (double)counts[j];
            if (error > best_error) {
                best_error = error;
                best = j;
            }
        }
        dataset_index[s] = (int16_t)best;
        dataset_sample_index[s] = counts[best];
        counts[best] += 1;
    }
    Py_END_ALLOW_THREADS
    free(counts);
    PyBuffer_Release(&weights_view);
    PyBuffer_Release(&dataset_view);
    PyBuffer_Release(&sample_view);
    Py_RETURN_NONE;
}

static PyObject *exhaustive_blending_index(PyObject *self, PyObject *args) {
    PyObject *sizes_obj, *dataset_obj, *sample_obj;
    Py_buffer sizes_view, dataset_view, sample_view;
    if (!PyArg_ParseTuple(args, "OOO", &sizes_obj, &dataset_obj, &sample_obj)) return NULL;
    if (get_buffer(sizes_obj, &sizes_view, 8, 0, "sizes") < 0) return NULL;
    if (get_buffer(dataset_obj, &dataset_view, 2, 1, "dataset_index") < 0) {
        PyBuffer_Release(&sizes_view);
        return NULL;
    }
    if (get_buffer(sample_obj, &sample_view, 8, 1, "dataset_sample_index") < 0) {
        PyBuffer_Release(&sizes_view);
        PyBuffer_Release(&dataset_view);
        return NULL;
    }
    Py_ssize_t num_datasets = sizes_view.len / 8;
    const int64_t *sizes = sizes_view.buf;
    int64_t total = 0;
    for (Py_ssize_t j = 0; j < num_datasets; j++) total += sizes[j];
    int64_t *counts = calloc(num_datasets > 0 ? num_datasets : 1, sizeof(int64_t));
    double *weights = calloc(num_datasets > 0 ? num_datasets : 1, sizeof(double));
    char *spent = calloc(num_datasets > 0 ? num_datasets : 1, 1);
    int bad = dataset_view.len / 2 < total || sample_view.len / 8 < total || counts == NULL || weights == NULL
              || spent == NULL;
    for (Py_ssize_t j = 0; j < num_datasets && !bad; j++) {
        bad = sizes[j] <= 0;
        weights[j] = (double)sizes[j] / (double)total;
    }
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "exhaustive_blending_index: a dataset without samples, or outputs too small");
    } else {
        int16_t *dataset_index = dataset_view.buf;
        int64_t *dataset_sample_index = sample_view.buf;
        Py_BEGIN_ALLOW_THREADS
        for (int64_t s = 0; s < total; s++) {
            double s_double = s > 1 ? (double)s : 1.0;
            Py_ssize_t best = -1;
            double best_error = 0.0;
            for (Py_ssize_t j = 0; j < num_datasets; j++) {  /* unspent datasets, in index order */
                if (spent[j]) continue;
                double error = weights[j] * s_double - (double)counts[j];
                if (best < 0 || error > best_error) {
                    best_error = error;
                    best = j;
                }
            }
            dataset_index[s] = (int16_t)best;
            dataset_sample_index[s] = counts[best];
            counts[best] += 1;
            if (counts[best] == sizes[best]) spent[best] = 1;
        }
        Py_END_ALLOW_THREADS
    }
    free(counts);
    free(weights);
    free(spent);
    PyBuffer_Release(&sizes_view);
    PyBuffer_Release(&dataset_view);
    PyBuffer_Release(&sample_view);
    if (bad) return NULL;
    Py_RETURN_NONE;
}

/* Combining-mark blocks: Combining Diacritical Marks, their Extended and Supplement blocks, for Symbols,
 * and Combining Half Marks (as tokenmill.tokenization.proof's _COMBINING_MARKS). */
static inline int is_combining_mark(uint32_t c) {
    return (c >= 0x0300 && c <= 0x036F) || (c >= 0x1AB0 && c <= 0x1AFF) || (c >= 0x1DC0 && c <= 0x1DFF) ||
           (c >= 0x20D0 && c <= 0x20FF) || (c >= 0xFE20 && c <= 0xFE2F);
}

static PyObject *first_risky_code_points(PyObject *self, PyObject *args) {
    PyObject *texts, *positions_obj, *widths_obj;
    Py_buffer positions_view, widths_view;
    if (!PyArg_ParseTuple(args, "O!OO", &PyList_Type, &texts, &positions_obj, &widths_obj)) return NULL;
    Py_ssize_t count = PyList_GET_SIZE(texts);
    if (get_buffer(positions_obj, &positions_view, 8, 1, "positions") < 0) return NULL;
    if (get_buffer(widths_obj, &widths_view, 1, 1, "widths") < 0) {
        PyBuffer_Release(&positions_view);
        return NULL;
    }
    int bad = 0;
    const void **data = NULL;
    Py_ssize_t *lengths = NULL;
    if (positions_view.len / 8 < count || widths_view.len < count) {
        PyErr_SetString(PyExc_ValueError, "positions and widths need one item per text");
        bad = 1;
    } else {
        data = malloc(sizeof(*data) * (count ? count : 1));
        lengths = malloc(sizeof(*lengths) * (count ? count : 1));
        if (data == NULL || lengths == NULL) {
            PyErr_NoMemory();
            bad = 1;
        }
    }
    int64_t *positions = positions_view.buf;
    uint8_t *widths = widths_view.buf;
    /* With the GIL: each text's storage. The list holds the texts, which are immutable, for the scan. */
    for (Py_ssize_t i = 0; !bad && i < count; i++) {
        PyObject *text = PyList_GET_ITEM(texts, i);
        if (!PyUnicode_Check(text)) {
            PyErr_Format(PyExc_TypeError, "texts[%zd] is not a str", i);
            bad = 1;
            break;
        }
        widths[i] = (uint8_t)PyUnicode_KIND(text);
        data[i] = PyUnicode_DATA(text);
        lengths[i] = PyUnicode_GET_LENGTH(text);
    }
    if (!bad) {
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < count; i++) {
            int64_t found = -1;
            if (widths[i] == PyUnicode_2BYTE_KIND) {  /* no code point outside the BMP: marks only */
                const Py_UCS2 *units = data[i];
                for (Py_ssize_t j = 0; j < lengths[i]; j++) {
                    if (units[j] >= 0x0300 && is_combining_mark(units[j])) {
                        found = j;
                        break;
                    }
                }
            } else if (widths[i] == PyUnicode_4BYTE_KIND) {
                const Py_UCS4 *units = data[i];
                for (Py_ssize_t j = 0; j < lengths[i]; j++) {
                    if (units[j] >= 0x0300 && (units[j] > 0xFFFF || is_combining_mark(units[j]))) {
                        found = j;
                        break;
                    }
                }
            }
            positions[i] = found;
        }
        Py_END_ALLOW_THREADS
    }
    free(data);
    free(lengths);
    PyBuffer_Release(&positions_view);
    PyBuffer_Release(&widths_view);
    if (bad) return NULL;
    Py_RETURN_NONE;
}

static PyObject *spell_tokens(PyObject *self, PyObject *args) {
    PyObject *objects[9];
    static const Py_ssize_t sizes[9] = {8, 8, 8, 1, 1, 8, 8, 8, 1};
    static const int writable[9] = {0, 0, 0, 0, 0, 0, 0, 1, 1};
    static const char *names[9] = {"ids", "lengths", "starts", "table", "text", "token_ends", "text_ends",
                                   "byte_ends", "spelled"};
    Py_buffer views[9];
    int held = 0;
    if (!PyArg_ParseTuple(args, "OOOOOOOOO", &objects[0], &objects[1], &objects[2], &objects[3], &objects[4],
                          &objects[5], &objects[6], &objects[7], &objects[8]))
        return NULL;
    for (; held < 9; held++)
        if (get_buffer(objects[held], &views[held], sizes[held], writable[held], names[held]) < 0) break;
    if (held == 9) {
        const int64_t *ids = views[0].buf, *lengths = views[1].buf, *starts = views[2].buf;
        const uint8_t *table = views[3].buf, *text = views[4].buf;
        const int64_t *token_ends = views[5].buf, *text_ends = views[6].buf;
        int64_t *byte_ends = views[7].buf;
        uint8_t *spelled = views[8].buf;
        int64_t n = views[0].len / 8, vocabulary = views[1].len / 8, table_size = views[3].len;
        int64_t texts = views[8].len, text_size = views[4].len;
        int bad = views[2].len / 8 != vocabulary || views[5].len / 8 != texts + 1 || views[6].len / 8 != texts + 1
                  || views[7].len / 8 != n + 1 || (texts >= 0 && (token_ends[texts] != n || token_ends[0] != 0
                                                                   || text_ends[texts] > text_size));
        for (int64_t k = 0; !bad && k < texts; k++)
            bad = token_ends[k + 1] < token_ends[k] || text_ends[k + 1] < text_ends[k] || text_ends[k] < 0;
        if (bad) {
            PyErr_SetString(PyExc_ValueError, "spell_tokens: inconsistent sizes");
        } else {
            Py_BEGIN_ALLOW_THREADS
            byte_ends[0] = 0;
            for (int64_t k = 0; k < texts; k++) {
                int64_t base = text_ends[k], size = text_ends[k + 1] - base, position = 0;
                int good = 1;
                for (int64_t i = token_ends[k]; i < token_ends[k + 1]; i++) {
                    int64_t id = ids[i], length = -1;
                    if (id >= 0 && id < vocabulary) length = lengths[id];
                    if (length < 0 || starts[id] < 0 || starts[id] + length > table_size) {
                        good = 0;
                        length = 0;
                    } else if (good && (position + length > size
                                        || memcmp(table + starts[id], text + base + position, length) != 0)) {
                        good = 0;
                    }
                    position += length;
                    byte_ends[i + 1] = byte_ends[i] + length;
                }
                spelled[k] = (uint8_t)(good && position == size);
            }
            Py_END_ALLOW_THREADS
        }
    }
    for (int i = 0; i < held; i++) PyBuffer_Release(&views[i]);
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

/* best_fit_bins's tree: leaf c (1..width) holds c while some bin has c tokens of room (the capacity's leaf
 * always: a new bin), else 0; an inner node the largest of its leaves. */
static void tree_set(int64_t *tree, int64_t width, int64_t leaf, int64_t value) {
    int64_t node = width + leaf - 1;
    tree[node] = value;
    for (node /= 2; node >= 1; node /= 2)
        tree[node] = tree[2 * node] > tree[2 * node + 1] ? tree[2 * node] : tree[2 * node + 1];
}

/* The smallest c whose leaf holds at least length (the leftmost such leaf); the caller knows tree[1] does. */
static int64_t tree_smallest_fit(const int64_t *tree, int64_t width, int64_t length) {
    int64_t node = 1;
    while (node < width) node = tree[2 * node] >= length ? 2 * node : 2 * node + 1;
    return node - width + 1;
}

static PyObject *best_fit_bins(PyObject *self, PyObject *args) {
    PyObject *lengths_obj, *bins_obj;
    long long capacity;
    Py_buffer lengths_view, bins_view;
    if (!PyArg_ParseTuple(args, "OLO", &lengths_obj, &capacity, &bins_obj)) return NULL;
    if (capacity < 1) {
        PyErr_SetString(PyExc_ValueError, "best_fit_bins: capacity must be positive");
        return NULL;
    }
    if (get_buffer(lengths_obj, &lengths_view, 8, 0, "lengths") < 0) return NULL;
    if (get_buffer(bins_obj, &bins_view, 8, 1, "bins") < 0) {
        PyBuffer_Release(&lengths_view);
        return NULL;
    }
    const int64_t *lengths = lengths_view.buf;
    int64_t *bins = bins_view.buf;
    Py_ssize_t count = lengths_view.len / 8;
    int64_t num_bins = 0;
    if (bins_view.len / 8 != count) {
        PyErr_SetString(PyExc_ValueError, "best_fit_bins: bins must be as long as lengths");
        goto done;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        if (lengths[i] < 1 || lengths[i] > capacity) {
            PyErr_Format(PyExc_ValueError, "best_fit_bins: lengths[%zd] = %lld is not in 1..%lld", i,
                         (long long)lengths[i], capacity);
            goto done;
        }
    }
    int64_t width = 1;
    while (width < capacity) width *= 2;
    /* tree: 2 * width nodes; queue heads and tails per capacity; each bin's successor in its queue */
    int64_t *tree = calloc(2 * width, sizeof(int64_t));
    int64_t *head = malloc((capacity + 1) * sizeof(int64_t)), *tail = malloc((capacity + 1) * sizeof(int64_t));
    int64_t *next = malloc((count + 1) * sizeof(int64_t));
    if (!tree || !head || !tail || !next) {
        free(tree), free(head), free(tail), free(next);
        PyErr_NoMemory();
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    for (int64_t c = 0; c <= capacity; c++) head[c] = tail[c] = -1;
    tree_set(tree, width, capacity, capacity);
    for (Py_ssize_t i = 0; i < count; i++) {
        int64_t room = tree_smallest_fit(tree, width, lengths[i]), bin;
        if (room == capacity) {
            bin = num_bins++;
        } else {  /* the first bin queued with this room leaves its queue */
            bin = head[room];
            head[room] = next[bin];
            if (head[room] < 0) {
                tail[room] = -1;
                tree_set(tree, width, room, 0);
            }
        }
        bins[i] = bin;
        int64_t left = room - lengths[i];
        if (left > 0) {  /* queued last among the bins of that room */
            next[bin] = -1;
            if (tail[left] < 0) {
                head[left] = bin;
                tree_set(tree, width, left, left);
            } else {
                next[tail[left]] = bin;
            }
            tail[left] = bin;
        }
    }
    Py_END_ALLOW_THREADS
    free(tree), free(head), free(tail), free(next);
done:
    PyBuffer_Release(&lengths_view);
    PyBuffer_Release(&bins_view);
    if (PyErr_Occurred()) return NULL;
    return PyLong_FromLongLong(num_bins);
}

static PyObject *eod_appended_cast(PyObject *self, PyObject *args) {
    PyObject *tokens_obj, *lengths_obj, *out_obj, *out_lengths_obj, *kept_obj;
    long long eod;
    Py_buffer tokens_view, lengths_view, out_view, out_lengths_view, kept_view;
    PyObject *result = NULL;
    if (!PyArg_ParseTuple(args, "OOLOOO", &tokens_obj, &lengths_obj, &eod, &out_obj, &out_lengths_obj, &kept_obj))
        return NULL;
    if (get_buffer(tokens_obj, &tokens_view, 4, 0, "tokens") < 0) return NULL;
    if (get_buffer(lengths_obj, &lengths_view, 8, 0, "lengths") < 0) goto release_tokens;
    if (PyObject_GetBuffer(out_obj, &out_view, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE | PyBUF_FORMAT) < 0)
        goto release_lengths;
    if (get_buffer(out_lengths_obj, &out_lengths_view, 8, 1, "out_lengths") < 0) goto release_out;
    if (get_buffer(kept_obj, &kept_view, 8, 1, "eod_in_text") < 0) goto release_out_lengths;
    const uint32_t *tokens = tokens_view.buf;
    const int64_t *lengths = lengths_view.buf;
    int64_t *out_lengths = out_lengths_view.buf, *kept = kept_view.buf;
    Py_ssize_t num_tokens = tokens_view.len / 4, documents = lengths_view.len / 8, width = out_view.itemsize;
    Py_ssize_t written = 0, num_kept = 0, eod_count = 0, position = 0;
    if (width != 1 && width != 2 && width != 4) {
        PyErr_Format(PyExc_TypeError, "out: expected 1-, 2- or 4-byte items, got %zd", width);
        goto release_kept;
    }
    if (out_view.len / width < num_tokens + (eod < 0 ? 0 : documents) || out_lengths_view.len / 8 < documents
        || kept_view.len / 8 < documents) {
        PyErr_SetString(PyExc_ValueError, "out, out_lengths or eod_in_text too short");
        goto release_kept;
    }
    int64_t total = 0;
    for (Py_ssize_t i = 0; i < documents; i++) {
        if (lengths[i] < 0) {
            PyErr_SetString(PyExc_ValueError, "a negative length");
            goto release_kept;
        }
        total += lengths[i];
    }
    if (total != num_tokens) {
        PyErr_SetString(PyExc_ValueError, "lengths do not add up to the tokens");
        goto release_kept;
    }
    Py_BEGIN_ALLOW_THREADS
    uint8_t *out8 = out_view.buf;
    uint16_t *out16 = out_view.buf;
    uint32_t *out32 = out_view.buf;
    const uint32_t eod_value = (uint32_t)eod;
    for (Py_ssize_t i = 0; i < documents; i++) {
        const uint32_t *document = tokens + position;
        Py_ssize_t length = (Py_ssize_t)lengths[i];
        if (width == 2)
            for (Py_ssize_t j = 0; j < length; j++) out16[written + j] = (uint16_t)document[j];
        else if (width == 4)
            for (Py_ssize_t j = 0; j < length; j++) out32[written + j] = document[j];
        else
            for (Py_ssize_t j = 0; j < length; j++) out8[written + j] = (uint8_t)document[j];
        written += length;
        position += length;
        out_lengths[i] = length;
        if (eod < 0) continue;
        for (Py_ssize_t j = 0; j < length; j++) eod_count += document[j] == eod_value;
        if (length > 0 && document[length - 1] == eod_value) {
            kept[num_kept++] = i;
            continue;
        }
        if (width == 2) out16[written] = (uint16_t)eod_value;
        else if (width == 4) out32[written] = eod_value;
        else out8[written] = (uint8_t)eod_value;
        written++;
        out_lengths[i] = length + 1;
    }
    Py_END_ALLOW_THREADS
    result = Py_BuildValue("nnn", written, num_kept, eod_count);
release_kept:
    PyBuffer_Release(&kept_view);
release_out_lengths:
    PyBuffer_Release(&out_lengths_view);
release_out:
    PyBuffer_Release(&out_view);
release_lengths:
    PyBuffer_Release(&lengths_view);
release_tokens:
    PyBuffer_Release(&tokens_view);
    return result;
}

/* ---------------------------------------------------------------------------------------------
 * json_texts: a batch of JSONL lines -> the string value of one top-level key of each, unescaped into one UTF-8
 * buffer, or a verdict of "not sure" for the whole batch.
 *
 * CONSERVATIVE by design: a "good" verdict must imply that orjson accepts every line (strict RFC 8259 JSON, strict
 * UTF-8, one value and nothing after it but whitespace) and gives the same text; anything this parser is not sure
 * of gives up on the batch, and the caller reads it as before (orjson, then line by line with each bad line's
 * reason). The grammar accepted (a subset of RFC 8259; ws = space, tab, LF, CR only):
 *
 *   line    = ws object ws                       the top level is an object (a plain-.key pattern's case)
 *   object  = "{" ws [ member *( ws "," ws member ) ] ws "}"
 *   member  = string ws ":" ws value
 *   array   = "[" ws [ value *( ws "," ws value ) ] ws "]"
 *   value   = object / array / string / number / "true" / "false" / "null"
 *   number  = [ "-" ] ( "0" / digit1-9 *17digit ) [ "." 1*17digit ] [ ( "e" / "E" ) [ "+" / "-" ] 1*2digit ]
 *             (at most 18 integer digits: an int64, never a big integer; short fractions and exponents only)
 *   string  = '"' *( char / escape ) '"'
 *   char    = a UTF-8 sequence of Unicode's Table 3-7 (no overlong form, no surrogate, nothing above U+10FFFF),
 *             not '"', not '\', not a control byte < 0x20
 *   escape  = '\' ( '"' / '\' / '/' / "b" / "f" / "n" / "r" / "t" / "u" 4hex ), where a "\u" of a high
 *             surrogate (D800-DBFF) is followed by a "\u" of a low one (DC00-DFFF) and a low one never stands
 *             alone (orjson refuses lone surrogates)
 *
 * and, beyond the grammar: containers nest at most 64 deep (orjson's limit is deeper); the top-level object
 * holds the key exactly once (orjson would keep the last of two), its key strings hold no escape (one could
 * spell the key), and the key's value is a non-empty string. Anything else: give up.
 * --------------------------------------------------------------------------------------------- */

#define JSON_MAX_DEPTH 64

typedef struct {
    const uint8_t *end;
    uint8_t *out;     /* where the key's text is written, or NULL while validating only */
} json_cursor;

static inline const uint8_t *json_ws(const uint8_t *p, const uint8_t *end) {
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
    return p;
}

static inline int json_hex(const uint8_t *p, uint32_t *value) {
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        uint8_t c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (uint32_t)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (uint32_t)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (uint32_t)(c - 'A' + 10);
        else return 0;
    }
    *value = v;
    return 1;
}

#define SWAR_ONES 0x0101010101010101ULL
#define SWAR_HIGHS 0x8080808080808080ULL
/* Any byte of w that is < n (n <= 128), equal to zero after an xor, or has its high bit set. */
#define SWAR_LESS(w, n) (((w) - SWAR_ONES * (n)) & ~(w) & SWAR_HIGHS)
#define SWAR_ZERO(w) (((w) - SWAR_ONES) & ~(w) & SWAR_HIGHS)

/* A string from its opening quote: the pointer after its closing quote, or NULL (give up). Its text goes to
 * *out (advanced) where out is not NULL; *escaped is set where it held an escape. */
static const uint8_t *json_string(const uint8_t *p, const uint8_t *end, uint8_t **out, int *escaped) {
    uint8_t *o = out ? *out : NULL;
    p++; /* the quote */
    for (;;) {
        /* Fast path: 8 plain ASCII bytes (0x20-0x7F but '"' and '\') at a time. */
        while (end - p >= 8) {
            uint64_t w;
            memcpy(&w, p, 8);
            uint64_t special = (w & SWAR_HIGHS) | SWAR_LESS(w, 0x20) | SWAR_ZERO(w ^ (SWAR_ONES * '"')) |
                               SWAR_ZERO(w ^ (SWAR_ONES * '\\'));
            /* The lowest flagged byte is exact (the tricks flag falsely only above a true one), little-endian */
#if PY_LITTLE_ENDIAN
            Py_ssize_t plain = special ? (Py_ssize_t)(__builtin_ctzll(special) >> 3) : 8;
#else
            Py_ssize_t plain = special ? 0 : 8;
#endif
            if (o) {
                memcpy(o, p, 8); /* (out has 8 bytes more than the lines, and a text is shorter than its line) */
                o += plain;
            }
            p += plain;
            if (plain < 8) break;
        }
        if (p >= end) return NULL;
        uint8_t c = *p;
        if (c == '"') {
            if (out) *out = o;
            return p + 1;
        }
        if (c < 0x20) return NULL;
        if (c < 0x80 && c != '\\') {
            if (o) *o++ = c;
            p++;
            continue;
        }
        if (c == '\\') {
            *escaped = 1;
            if (end - p < 2) return NULL;
            uint8_t e = p[1];
            uint8_t plain = 0;
            switch (e) {
                case '"': plain = '"'; break;
                case '\\': plain = '\\'; break;
                case '/': plain = '/'; break;
                case 'b': plain = '\b'; break;
                case 'f': plain = '\f'; break;
                case 'n': plain = '\n'; break;
                case 'r': plain = '\r'; break;
                case 't': plain = '\t'; break;
                case 'u': break;
                default: return NULL;
            }
            if (e != 'u') {
                if (o) *o++ = plain;
                p += 2;
                continue;
            }
            uint32_t cp, low;
            if (end - p < 6 || !json_hex(p + 2, &cp)) return NULL;
            p += 6;
            if (cp >= 0xDC00 && cp <= 0xDFFF) return NULL; /* a lone low surrogate */
            if (cp >= 0xD800 && cp <= 0xDBFF) {             /* a high one: its low one must follow */
                if (end - p < 6 || p[0] != '\\' || p[1] != 'u' || !json_hex(p + 2, &low) || low < 0xDC00 ||
                    low > 0xDFFF)
                    return NULL;
                p += 6;
                cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
            }
            if (o) {
                if (cp < 0x80) *o++ = (uint8_t)cp;
                else if (cp < 0x800) {
                    *o++ = (uint8_t)(0xC0 | (cp >> 6));
                    *o++ = (uint8_t)(0x80 | (cp & 0x3F));
                } else if (cp < 0x10000) {
                    *o++ = (uint8_t)(0xE0 | (cp >> 12));
                    *o++ = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
                    *o++ = (uint8_t)(0x80 | (cp & 0x3F));
                } else {
                    *o++ = (uint8_t)(0xF0 | (cp >> 18));
                    *o++ = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
                    *o++ = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
                    *o++ = (uint8_t)(0x80 | (cp & 0x3F));
                }
            }
            continue;
        }
        /* A run of multi-byte UTF-8 sequences, strictly (Unicode Table 3-7). */
        do {
            Py_ssize_t need;
            uint8_t low = 0x80, high = 0xBF;
            if (c >= 0xC2 && c <= 0xDF) need = 1;
            else if (c == 0xE0) { need = 2; low = 0xA0; }
            else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) need = 2;
            else if (c == 0xED) { need = 2; high = 0x9F; }
            else if (c == 0xF0) { need = 3; low = 0x90; }
            else if (c >= 0xF1 && c <= 0xF3) need = 3;
            else if (c == 0xF4) { need = 3; high = 0x8F; }
            else return NULL;
            if (end - p < need + 1) return NULL;
            if (p[1] < low || p[1] > high) return NULL;
            for (Py_ssize_t k = 2; k <= need; k++)
                if (p[k] < 0x80 || p[k] > 0xBF) return NULL;
            if (o) {
                /* 4 bytes where the line holds them (out has 8 to spare past the texts; what is past this sequence
                 * is written over); only its own at the line's end, which may be the end of the block's memory */
                memcpy(o, p, end - p >= 4 ? 4 : (size_t)(need + 1));
                o += need + 1;
            }
            p += need + 1;
        } while (p < end && (c = *p) >= 0x80);
    }
}

static const uint8_t *json_digits(const uint8_t *p, const uint8_t *end, int most) {
    const uint8_t *start = p;
    while (p < end && *p >= '0' && *p <= '9') p++;
    return (p == start || p - start > most) ? NULL : p;
}

static const uint8_t *json_number(const uint8_t *p, const uint8_t *end) {
    if (p < end && *p == '-') p++;
    if (p >= end) return NULL;
    if (*p == '0') p++;
    else if (*p >= '1' && *p <= '9') {
        if (!(p = json_digits(p, end, 18))) return NULL;
    } else return NULL;
    if (p < end && *p == '.') {
        if (!(p = json_digits(p + 1, end, 17))) return NULL;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < end && (*p == '+' || *p == '-')) p++;
        if (!(p = json_digits(p, end, 2))) return NULL;
    }
    return p;
}

static const uint8_t *json_value(const uint8_t *p, const uint8_t *end, int depth);

/* An array or object from its bracket: the pointer after its closing one, or NULL. */
static const uint8_t *json_container(const uint8_t *p, const uint8_t *end, int depth) {
    if (depth > JSON_MAX_DEPTH) return NULL;
    uint8_t close = *p == '{' ? '}' : ']';
    int escaped = 0;
    p = json_ws(p + 1, end);
    if (p < end && *p == close) return p + 1;
    for (;;) {
        if (close == '}') {
            if (p >= end || *p != '"' || !(p = json_string(p, end, NULL, &escaped))) return NULL;
            p = json_ws(p, end);
            if (p >= end || *p != ':') return NULL;
            p = json_ws(p + 1, end);
        }
        if (!(p = json_value(p, end, depth))) return NULL;
        p = json_ws(p, end);
        if (p >= end) return NULL;
        if (*p == close) return p + 1;
        if (*p != ',') return NULL;
        p = json_ws(p + 1, end);
    }
}

static const uint8_t *json_value(const uint8_t *p, const uint8_t *end, int depth) {
    int escaped = 0;
    if (p >= end) return NULL;
    switch (*p) {
        case '{':
        case '[': return json_container(p, end, depth + 1);
        case '"': return json_string(p, end, NULL, &escaped);
        case 't': return (end - p >= 4 && memcmp(p, "true", 4) == 0) ? p + 4 : NULL;
        case 'f': return (end - p >= 5 && memcmp(p, "false", 5) == 0) ? p + 5 : NULL;
        case 'n': return (end - p >= 4 && memcmp(p, "null", 4) == 0) ? p + 4 : NULL;
        default: return json_number(p, end);
    }
}

/* One line: 1 where it is sure (the text written at *out, advanced), 0 where it gives up. */
static int json_line_text(const uint8_t *p, const uint8_t *end, const uint8_t *key, Py_ssize_t key_length,
                          uint8_t **out) {
    int found = 0;
    p = json_ws(p, end);
    if (p >= end || *p != '{') return 0;
    p = json_ws(p + 1, end);
    if (p < end && *p == '}') return 0; /* {}: no key */
    for (;;) {
        int escaped = 0;
        if (p >= end || *p != '"') return 0;
        const uint8_t *name = p + 1;
        if (!(p = json_string(p, end, NULL, &escaped)) || escaped) return 0;
        int is_key = (p - 1 - name == key_length) && memcmp(name, key, (size_t)key_length) == 0;
        p = json_ws(p, end);
        if (p >= end || *p != ':') return 0;
        p = json_ws(p + 1, end);
        if (is_key) {
            uint8_t *start = *out;
            if (found++ || p >= end || *p != '"' || !(p = json_string(p, end, out, &escaped)) || *out == start)
                return 0; /* twice, not a string, or empty */
        } else if (!(p = json_value(p, end, 1))) return 0;
        p = json_ws(p, end);
        if (p >= end) return 0;
        if (*p == '}') break;
        if (*p != ',') return 0;
        p = json_ws(p + 1, end);
    }
    return found && json_ws(p + 1, end) == end;
}

static PyObject *json_texts(PyObject *self, PyObject *args) {
    PyObject *block_obj, *starts_obj, *lengths_obj, *out_obj, *offsets_obj;
    const char *key;
    Py_ssize_t key_length;
    Py_buffer block_view, starts_view, lengths_view, out_view, offsets_view;
    PyObject *result = NULL;
    if (!PyArg_ParseTuple(args, "OOOy#OO", &block_obj, &starts_obj, &lengths_obj, &key, &key_length, &out_obj,
                          &offsets_obj))
        return NULL;
    if (get_buffer(block_obj, &block_view, 1, 0, "block") < 0) return NULL;
    if (get_buffer(starts_obj, &starts_view, 8, 0, "starts") < 0) goto release_block;
    if (get_buffer(lengths_obj, &lengths_view, 8, 0, "lengths") < 0) goto release_starts;
    if (get_buffer(out_obj, &out_view, 1, 1, "out") < 0) goto release_lengths;
    if (get_buffer(offsets_obj, &offsets_view, 8, 1, "offsets") < 0) goto release_out;
    Py_ssize_t count = starts_view.len / 8;
    const int64_t *starts = starts_view.buf, *lengths = lengths_view.buf;
    int64_t *offsets = offsets_view.buf;
    if (lengths_view.len / 8 != count || offsets_view.len / 8 < count + 1) {
        PyErr_SetString(PyExc_ValueError, "starts, lengths and offsets (one more) need one item per line");
        goto release_offsets;
    }
    int64_t total = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        if (starts[i] < 0 || lengths[i] < 0 || starts[i] + lengths[i] > block_view.len) {
            PyErr_SetString(PyExc_ValueError, "a line outside the block");
            goto release_offsets;
        }
        total += lengths[i];
    }
    if (out_view.len < total + 8) {
        PyErr_SetString(PyExc_ValueError, "out is shorter than the lines and 8 bytes");
        goto release_offsets;
    }
    int good = 1;
    Py_BEGIN_ALLOW_THREADS
    const uint8_t *block = block_view.buf;
    uint8_t *base = out_view.buf, *out = base;
    offsets[0] = 0;
    for (Py_ssize_t i = 0; good && i < count; i++) {
        good = json_line_text(block + starts[i], block + starts[i] + lengths[i], (const uint8_t *)key, key_length,
                              &out);
        offsets[i + 1] = out - base;
    }
    Py_END_ALLOW_THREADS
    result = PyBool_FromLong(good);
release_offsets:
    PyBuffer_Release(&offsets_view);
release_out:
    PyBuffer_Release(&out_view);
release_lengths:
    PyBuffer_Release(&lengths_view);
release_starts:
    PyBuffer_Release(&starts_view);
release_block:
    PyBuffer_Release(&block_view);
    return result;
}

/* utf8_facts(data:uint8[], offsets:int64[n+1], characters:int64[n], first_risky:int64[n], widths:uint8[n])
 * For texts given as valid UTF-8 (json_texts' output): the facts the proof's sampler reads off Python's str of
 * each, without making one: characters[i] = its code points (len of its str), widths[i] = the bytes per code point
 * CPython would store it in (1 below U+0100, 2 below U+10000, else 4), first_risky[i] = the index of its first code
 * point outside the BMP or in a combining-mark block (is_combining_mark), else -1 (first_risky_code_points' rule).
 * One pass, 8 ASCII bytes at a time, the GIL released. */
static PyObject *utf8_facts(PyObject *self, PyObject *args) {
    PyObject *objects[5];
    Py_buffer views[5];
    static const Py_ssize_t sizes[5] = {1, 8, 8, 8, 1};
    static const int writable[5] = {0, 0, 1, 1, 1};
    static const char *names[5] = {"data", "offsets", "characters", "first_risky", "widths"};
    if (!PyArg_ParseTuple(args, "OOOOO", &objects[0], &objects[1], &objects[2], &objects[3], &objects[4]))
        return NULL;
    int got = 0;
    for (; got < 5; got++)
        if (get_buffer(objects[got], &views[got], sizes[got], writable[got], names[got]) < 0) break;
    PyObject *result = NULL;
    if (got == 5) {
        Py_ssize_t count = views[1].len / 8 - 1;
        const int64_t *offsets = views[1].buf;
        int ok = count >= 0 && views[2].len / 8 >= count && views[3].len / 8 >= count && views[4].len >= count;
        for (Py_ssize_t i = 0; ok && i < count; i++)
            ok = offsets[i] >= 0 && offsets[i] <= offsets[i + 1] && offsets[i + 1] <= views[0].len;
        if (!ok) PyErr_SetString(PyExc_ValueError, "offsets outside the data, or outputs too short");
        else {
            const uint8_t *data = views[0].buf;
            int64_t *characters = views[2].buf, *first_risky = views[3].buf;
            uint8_t *widths = views[4].buf;
            Py_BEGIN_ALLOW_THREADS
            for (Py_ssize_t i = 0; i < count; i++) {
                const uint8_t *p = data + offsets[i], *end = data + offsets[i + 1];
                int64_t chars = 0, risky = -1;
                uint8_t highest = 0;
                while (p < end) {
                    if (end - p >= 8) {
                        uint64_t w;
                        memcpy(&w, p, 8);
                        if (!(w & SWAR_HIGHS)) {
                            chars += 8;
                            p += 8;
                            continue;
                        }
                    }
                    uint8_t c = *p;
                    if (c < 0x80) {
                        chars++;
                        p++;
                        continue;
                    }
                    uint32_t cp;
                    Py_ssize_t size;
                    if (c < 0xE0) { cp = c & 0x1F; size = 2; }
                    else if (c < 0xF0) { cp = c & 0x0F; size = 3; }
                    else { cp = c & 0x07; size = 4; }
                    if (end - p < size) size = end - p; /* (never, for valid UTF-8) */
                    for (Py_ssize_t k = 1; k < size; k++) cp = (cp << 6) | (p[k] & 0x3F);
                    if (c > highest) highest = c;
                    if (risky < 0 && (cp > 0xFFFF || is_combining_mark(cp))) risky = chars;
                    chars++;
                    p += size;
                }
                characters[i] = chars;
                first_risky[i] = risky;
                widths[i] = highest < 0xC4 ? 1 : highest < 0xF0 ? 2 : 4;
            }
            Py_END_ALLOW_THREADS
            result = Py_None;
            Py_INCREF(result);
        }
    }
    while (got-- > 0) PyBuffer_Release(&views[got]);
    return result;
}

static PyMethodDef methods[] = {
    {"json_texts", json_texts, METH_VARARGS,
     "A batch of JSON lines' texts of one top-level key, unescaped into one buffer, or False where not sure."},
    {"utf8_facts", utf8_facts, METH_VARARGS,
     "Each UTF-8 text's code points, CPython width and first code point outside the BMP or combining."},
    {"eod_appended_cast", eod_appended_cast, METH_VARARGS,
     "A batch's ids cast to the output width with the EOD after each document that does not end with it."},
    {"best_fit_bins", best_fit_bins, METH_VARARGS, "Optimized Best-Fit Decreasing: each document's bin."},
    {"sample_index", sample_index, METH_VARARGS, "Megatron's sample index walk into an int64 (n+1, 2) buffer."},
    {"blending_index", blending_index, METH_VARARGS, "Greedy blending of weighted datasets."},
    {"exhaustive_blending_index", exhaustive_blending_index, METH_VARARGS, "Blending until every dataset is spent."},
    {"first_risky_code_points", first_risky_code_points, METH_VARARGS,
     "Each text's first code point outside the BMP or in a combining-mark block, and its width."},
    {"spell_tokens", spell_tokens, METH_VARARGS, "Whether each text's ids spell its bytes, and each token's end."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_kernels", NULL, -1, methods};

PyMODINIT_FUNC PyInit__kernels(void) { return PyModule_Create(&module); }
