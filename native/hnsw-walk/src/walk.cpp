// A read-only walker over a graph file saved by usearch's index_dense_gt, compiled from the npm package's
// own headers and NumKong kernels, so the format and the distances are the JS binding's, and its walk
// returns what usearch's search returns (test/unit/hnsw-graph.test.ts). What it adds over the binding:
//  - the walk asks for each neighbour's vector `lag` neighbours before scoring it, so the reads (512 bytes
//    from a random place each) overlap instead of each one stalling the walk; usearch's own prefetch hook,
//    all of a node's neighbours at once, gained nothing here;
//  - no per-call thread, result arrays or vector lookup table (the binding's own overhead, ~1.6x);
//  - the file can be read into anonymous memory advised for transparent huge pages (Debian's default THP
//    mode is `madvise`: only memory that asks gets them, and a mapped ext4 file never does).
#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <node_api.h>

#include <usearch/index_dense.hpp>

namespace {

using namespace unum::usearch;

using key_t = default_key_t;
using slot_t = default_slot_t;
using graph_t = index_gt<distance_punned_t, key_t, slot_t, aligned_allocator_gt<byte_t, 64>, memory_mapping_allocator_gt<64>>;
using member_citerator_t = graph_t::member_citerator_t;
using member_cref_t = graph_t::member_cref_t;

constexpr std::size_t HUGE_PAGE = 2u << 20;

struct Scored {
    float distance;
    std::uint32_t slot;
};
struct Nearer {  // min-heap on distance (candidates to expand)
    bool operator()(Scored a, Scored b) const noexcept { return a.distance > b.distance; }
};
struct Farther {  // max-heap on distance (the best `ef` so far, worst on top)
    bool operator()(Scored a, Scored b) const noexcept { return a.distance < b.distance; }
};

/** The graph file's bytes: the file mapped, or a copy in anonymous memory. Unmapped with its last owner. */
struct Region {
    byte_t* mapping = nullptr;  // what mmap returned
    std::size_t mapping_bytes = 0;
    byte_t* data = nullptr;     // the file's first byte (2 MiB-aligned inside `mapping` for a copy)
    std::size_t bytes = 0;
    bool huge = false;          // the kernel took MADV_HUGEPAGE
    Region() = default;
    Region(Region const&) = delete;
    Region& operator=(Region const&) = delete;
    ~Region() {
        if (mapping) munmap(mapping, mapping_bytes);
    }
};

struct Walker {
    // Shared with a copy being made from it on a libuv thread, so closing the walker cannot unmap it mid-copy.
    std::shared_ptr<Region> region;
    byte_t const* vectors = nullptr;  // row-major, `vector_bytes` per slot
    std::size_t vector_bytes = 0;
    std::size_t dimensions = 0;
    metric_punned_t metric;
    cast_punned_t from_f32 = nullptr;
    graph_t* graph = nullptr;  // usearch's own view: validates the file and lays out the nodes
    // The walk's own view of the same bytes: node tapes by slot, entry point, levels.
    std::vector<byte_t const*> nodes;
    std::size_t neighbors_base_bytes = 0, neighbors_bytes = 0;
    std::size_t entry_slot = 0;
    int max_level = 0;
    // Per-search state, reused: one walk at a time per walker (the lock).
    std::vector<byte_t> query;          // the query cast to the graph's scalar kind
    std::vector<std::uint64_t> visited; // one bit per slot
    std::vector<std::uint32_t> touched; // words of `visited` to clear after the walk
    std::vector<Scored> next, top;      // candidates to expand (min-heap), the best `ef` (max-heap)
    std::vector<std::uint32_t> fresh;   // the unvisited neighbours of the node being expanded
    std::mutex lock;

    ~Walker() {
        if (graph) {
            graph->~graph_t();
            std::free(graph);
        }
    }
    Walker() = default;
    Walker(Walker const&) = delete;
    Walker& operator=(Walker const&) = delete;
};

/** Scores `query` against a member's vector, as index_dense_gt's metric proxy does, without its lookup table. */
struct Distance {
    Walker const* w;
    byte_t const* v(std::size_t slot) const noexcept { return w->vectors + w->vector_bytes * slot; }
    distance_punned_t operator()(byte_t const* a, member_cref_t b) const noexcept { return w->metric(a, v(get_slot(b))); }
    distance_punned_t operator()(member_cref_t a, member_cref_t b) const noexcept { return w->metric(v(get_slot(a)), v(get_slot(b))); }
    distance_punned_t operator()(byte_t const* a, member_citerator_t b) const noexcept { return w->metric(a, v(get_slot(b))); }
    distance_punned_t operator()(member_citerator_t a, member_citerator_t b) const noexcept { return w->metric(v(get_slot(a)), v(get_slot(b))); }
    distance_punned_t operator()(byte_t const* a, byte_t const* b) const noexcept { return w->metric(a, b); }
};

struct Allow {
    bool operator()(member_cref_t const&) const noexcept { return true; }
};

/** usearch's node tape: u64 key, i16 level, then the base neighbours (u32 count, u32 slots), then the upper levels'. */
constexpr std::size_t NODE_HEAD = sizeof(key_t) + sizeof(std::int16_t);

inline std::uint32_t load_u32(byte_t const* p) noexcept {
    std::uint32_t v;
    std::memcpy(&v, p, sizeof(v));
    return v;
}

/** A neighbour count read from the file, never more than its list holds (a damaged file must not overrun). */
inline std::uint32_t capped(std::uint32_t count, std::size_t list_bytes) noexcept {
    return std::min<std::uint32_t>(count, static_cast<std::uint32_t>(list_bytes / sizeof(std::uint32_t) - 1));
}

/** A prefetch never faults, so a slot out of range (a damaged file) costs nothing here; it is skipped when scored. */
inline void prefetch_vector(Walker const& w, std::uint32_t slot) noexcept {
    byte_t const* p = w.vectors + w.vector_bytes * slot;
    for (std::size_t line = 0; line < w.vector_bytes; line += 64) __builtin_prefetch(p + line, 0, 3);
}

/**
 * usearch's search (index_gt::search: greedy descent through the upper levels, then the ef-bounded
 * best-first walk of the base level, the same entry point, neighbour order, visit rule and distances),
 * written out so that the walk can prefetch `lag` vectors ahead of the one it scores: a vector is read
 * from a random place in the file, and scoring it waits on that read unless it was asked for earlier.
 * Prefetching all of a node's neighbours at once (usearch's hook) did not help: the reads queue up.
 */
std::size_t walk(Walker& w, byte_t const* q, std::size_t wanted, std::size_t ef, std::size_t lag, key_t* out) {
    std::size_t const n = w.nodes.size();
    if (n == 0) return 0;
    auto distance = [&](std::uint32_t slot) { return static_cast<float>(w.metric(q, w.vectors + w.vector_bytes * slot)); };
    std::uint32_t closest = static_cast<std::uint32_t>(w.entry_slot);
    float closest_distance = distance(closest);
    for (int level = w.max_level; level > 0; --level) {
        bool changed;
        do {
            changed = false;
            byte_t const* list = w.nodes[closest] + NODE_HEAD + w.neighbors_base_bytes + (level - 1) * w.neighbors_bytes;
            std::uint32_t const count = capped(load_u32(list), w.neighbors_bytes);
            byte_t const* slots = list + sizeof(std::uint32_t);
            for (std::uint32_t j = 0; j < count && j < lag; ++j) prefetch_vector(w, load_u32(slots + 4 * j));
            for (std::uint32_t j = 0; j < count; ++j) {
                if (j + lag < count) prefetch_vector(w, load_u32(slots + 4 * (j + lag)));
                std::uint32_t const s = load_u32(slots + 4 * j);
                if (s >= n) continue;
                float const d = distance(s);
                if (d < closest_distance) closest_distance = d, closest = s, changed = true;
            }
        } while (changed);
    }

    std::vector<Scored>& next = w.next;
    std::vector<Scored>& top = w.top;
    next.clear();
    top.clear();
    auto mark = [&](std::uint32_t s) {
        std::uint64_t& word = w.visited[s >> 6];
        std::uint64_t const bit = std::uint64_t(1) << (s & 63);
        if (word & bit) return false;
        if (!word) w.touched.push_back(s >> 6);
        word |= bit;
        return true;
    };
    mark(closest);
    next.push_back({closest_distance, closest});
    top.push_back({closest_distance, closest});
    float radius = closest_distance;
    std::vector<std::uint32_t>& fresh = w.fresh;
    fresh.resize(w.neighbors_base_bytes / sizeof(std::uint32_t));
    while (!next.empty()) {
        Scored const c = next.front();
        if (c.distance > radius && top.size() == ef) break;
        std::pop_heap(next.begin(), next.end(), Nearer{});
        next.pop_back();
        byte_t const* list = w.nodes[c.slot] + NODE_HEAD;
        std::uint32_t const count = capped(load_u32(list), w.neighbors_base_bytes);
        byte_t const* slots = list + sizeof(std::uint32_t);
        std::uint32_t m = 0;
        for (std::uint32_t j = 0; j < count; ++j) {
            std::uint32_t const s = load_u32(slots + 4 * j);
            if (s < n && mark(s)) fresh[m++] = s;
        }
        for (std::uint32_t j = 0; j < m && j < lag; ++j) prefetch_vector(w, fresh[j]);
        for (std::uint32_t j = 0; j < m; ++j) {
            if (j + lag < m) prefetch_vector(w, fresh[j + lag]);
            std::uint32_t const s = fresh[j];
            float const d = distance(s);
            if (top.size() < ef || d < radius) {
                next.push_back({d, s});
                std::push_heap(next.begin(), next.end(), Nearer{});
                top.push_back({d, s});
                std::push_heap(top.begin(), top.end(), Farther{});
                if (top.size() > ef) {
                    std::pop_heap(top.begin(), top.end(), Farther{});
                    top.pop_back();
                }
                radius = top.front().distance;
            }
        }
    }
    for (std::uint32_t word : w.touched) w.visited[word] = 0;
    w.touched.clear();
    std::sort(top.begin(), top.end(), [](Scored a, Scored b) { return a.distance < b.distance || (a.distance == b.distance && a.slot < b.slot); });
    std::size_t const found = std::min(wanted, top.size());
    for (std::size_t i = 0; i < found; ++i) {
        key_t key;
        std::memcpy(&key, w.nodes[top[i].slot], sizeof(key));
        out[i] = key;
    }
    return found;
}

napi_value fail(napi_env env, std::string const& message) {
    napi_throw_error(env, nullptr, message.c_str());
    return nullptr;
}


/** The file mapped read-only: pages come from and stay in the page cache, as usearch's `view`. */
std::shared_ptr<Region> map_file(char const* path, std::string& error) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return error = std::string("open: ") + std::strerror(errno), nullptr;
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size == 0) {
        error = st.st_size == 0 ? std::string("the file is empty") : std::string("stat: ") + std::strerror(errno);
        close(fd);
        return nullptr;
    }
    std::size_t const bytes = static_cast<std::size_t>(st.st_size);
    void* m = mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED) return error = std::string("mmap: ") + std::strerror(errno), nullptr;
    auto r = std::make_shared<Region>();
    r->mapping = r->data = static_cast<byte_t*>(m);
    r->mapping_bytes = r->bytes = bytes;
    return r;
}

/**
 * A copy of a mapped file in anonymous memory, advised for transparent huge pages when `huge` (advice
 * only: with THP off the copy keeps 4 KiB pages). Copied from the mapping, not read again by path: a
 * rebuild may have renamed a newer file over the path meanwhile, and the copy must be the graph mapped.
 */
std::shared_ptr<Region> copy_region(Region const& src, bool huge, std::string& error) {
    auto r = std::make_shared<Region>();
    r->mapping_bytes = src.bytes + HUGE_PAGE;
    void* m = mmap(nullptr, r->mapping_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return error = std::string("mmap: ") + std::strerror(errno), nullptr;
    r->mapping = static_cast<byte_t*>(m);
    // Huge pages only cover 2 MiB-aligned ranges, so the data starts on such a boundary.
    r->data = reinterpret_cast<byte_t*>((reinterpret_cast<std::uintptr_t>(m) + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1));
    r->bytes = src.bytes;
    if (huge) r->huge = madvise(r->data, r->bytes, MADV_HUGEPAGE) == 0;
    std::memcpy(r->data, src.data, src.bytes);
    return r;
}

/** Checks a graph file's bytes and lays out its nodes (no napi calls: runs on a libuv thread too). */
Walker* open_walker(std::shared_ptr<Region> region, std::string const& name, std::string& error) {
    Walker* w = new Walker();
    auto failed = [&](std::string const& why) -> Walker* {
        delete w;
        error = name + ": " + why;
        return nullptr;
    };
    w->region = std::move(region);
    byte_t* const base = w->region->data;
    std::size_t const file_bytes = w->region->bytes;
    // index_dense_gt's layout: u32 rows, u32 columns (bytes per row), the rows, its 64-byte head, index_gt.
    std::uint32_t dims[2];
    if (file_bytes < sizeof(dims)) return failed("the file lacks the vector matrix");
    std::memcpy(dims, base, sizeof(dims));
    std::size_t offset = sizeof(dims);
    std::size_t const matrix_bytes = std::size_t(dims[0]) * dims[1];
    if (file_bytes - offset < matrix_bytes + sizeof(index_dense_head_buffer_t)) return failed("the file is shorter than its vector matrix");
    w->vectors = base + offset;
    w->vector_bytes = dims[1];
    offset += matrix_bytes;
    index_dense_head_t head{base + offset};
    if (std::memcmp(base + offset, default_magic(), std::strlen(default_magic())) != 0 || head.version_major != USEARCH_VERSION_MAJOR ||
        head.kind_key != scalar_kind<key_t>() || head.kind_compressed_slot != scalar_kind<slot_t>() || head.multi)
        return failed("not a usearch " + std::to_string(USEARCH_VERSION_MAJOR) + ".x single-key index");
    w->dimensions = head.dimensions;
    w->metric = metric_punned_t::builtin(w->dimensions, head.kind_metric, head.kind_scalar);
    if (w->metric.bytes_per_vector() != w->vector_bytes) return failed("its vector size does not match its scalar kind");
    w->from_f32 = casts_punned_t::make(head.kind_scalar).from.f32;
    w->query.resize(w->vector_bytes);
    offset += sizeof(index_dense_head_buffer_t);

    void* raw = std::aligned_alloc(64, (sizeof(graph_t) + 63) / 64 * 64);
    if (!raw) return failed("out of memory");
    index_config_t config;
    w->graph = new (raw) graph_t(config);
    index_limits_t limits(0, 1);
    w->graph->try_reserve(limits);
    serialization_result_t viewed = w->graph->view(memory_mapped_file_t(base, file_bytes), offset);
    if (!viewed) return failed(viewed.error.what());
    if (w->graph->size() != dims[0]) return failed("the graph and its vectors differ in size");
    // The node tapes, laid out as index_gt::view lays them out (it has just checked that they fit the file).
    index_serialized_header_t header;
    std::memcpy(&header, base + offset, sizeof(header));
    std::size_t const n = static_cast<std::size_t>(header.size);
    w->neighbors_base_bytes = sizeof(std::uint32_t) * (1 + header.connectivity_base);
    w->neighbors_bytes = sizeof(std::uint32_t) * (1 + header.connectivity);
    w->entry_slot = static_cast<std::size_t>(header.entry_slot);
    w->max_level = static_cast<int>(header.max_level);
    w->nodes.resize(n);
    byte_t const* levels = base + offset + sizeof(header);
    byte_t const* tape = levels + sizeof(std::int16_t) * n;
    for (std::size_t i = 0; i < n; ++i) {
        std::int16_t level;
        std::memcpy(&level, levels + sizeof(level) * i, sizeof(level));
        w->nodes[i] = tape;
        tape += NODE_HEAD + w->neighbors_base_bytes + w->neighbors_bytes * static_cast<std::size_t>(level);
    }
    if (n && (tape > base + file_bytes || w->entry_slot >= n)) return failed("the graph's nodes do not fit the file");
    w->visited.assign((n + 63) / 64, 0);
    return w;
}

/** Frees what a walker holds now (a closed graph's memory must not wait for a garbage collection). */
void release(Walker* w) {
    std::lock_guard<std::mutex> guard(w->lock);
    if (w->graph) {
        w->graph->~graph_t();
        std::free(w->graph);
        w->graph = nullptr;
    }
    w->region.reset();  // unmapped now, or when a copy being made from it is done
    w->vectors = nullptr;
    std::vector<byte_t const*>().swap(w->nodes);
    std::vector<std::uint64_t>().swap(w->visited);
    std::vector<Scored>().swap(w->next);
    std::vector<Scored>().swap(w->top);
}

void finalize(napi_env, void* data, void*) { delete static_cast<Walker*>(data); }

/** { handle, size, dimensions, hugePages } for JS; the handle owns the walker. */
napi_value opened(napi_env env, Walker* w) {
    napi_value out, handle, size, dimensions, huge;
    napi_create_object(env, &out);
    napi_create_external(env, w, finalize, nullptr, &handle);
    napi_create_double(env, static_cast<double>(w->nodes.size()), &size);
    napi_create_double(env, static_cast<double>(w->dimensions), &dimensions);
    napi_get_boolean(env, w->region->huge, &huge);
    napi_set_named_property(env, out, "handle", handle);
    napi_set_named_property(env, out, "size", size);
    napi_set_named_property(env, out, "dimensions", dimensions);
    napi_set_named_property(env, out, "hugePages", huge);
    return out;
}

/** The call's first `n` arguments into `argv`, or false with a usage error thrown. */
bool arguments(napi_env env, napi_callback_info info, std::size_t n, napi_value* argv, char const* usage) {
    std::size_t argc = n;
    napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
    if (argc < n) return fail(env, usage), false;
    return true;
}

Walker* walker_of(napi_env env, napi_value handle) {
    void* data = nullptr;
    if (napi_get_value_external(env, handle, &data) != napi_ok || !data) return fail(env, "not a graph handle"), nullptr;
    return static_cast<Walker*>(data);
}

/** The call's first `n` arguments, the first one a graph handle: its walker, or null with an error thrown. */
Walker* walker_call(napi_env env, napi_callback_info info, std::size_t n, napi_value* argv, char const* usage) {
    return arguments(env, info, n, argv, usage) ? walker_of(env, argv[0]) : nullptr;
}

/** openGraph(path) -> { handle, size, dimensions, hugePages }: the file mapped (page cache). */
napi_value OpenGraph(napi_env env, napi_callback_info info) {
    napi_value argv[1];
    if (!arguments(env, info, 1, argv, "openGraph(path)")) return nullptr;
    std::size_t len = 0;
    if (napi_get_value_string_utf8(env, argv[0], nullptr, 0, &len) != napi_ok) return fail(env, "path must be a string");
    std::string path(len, '\0'), error;
    napi_get_value_string_utf8(env, argv[0], &path[0], len + 1, &len);
    std::shared_ptr<Region> region = map_file(path.c_str(), error);
    Walker* w = region ? open_walker(std::move(region), path, error) : nullptr;
    if (!w) return fail(env, region ? error : path + ": " + error);
    return opened(env, w);
}

struct CopyJob {
    std::shared_ptr<Region> source;
    bool huge = false;
    std::string error;
    Walker* walker = nullptr;
    napi_deferred deferred;
    napi_async_work work;
};

/**
 * copyGraph(handle, hugePages) -> Promise of what openGraph returns: the handle's graph copied into
 * anonymous memory on a libuv thread (from its mapping, which the job keeps alive even if the handle closes).
 */
napi_value CopyGraph(napi_env env, napi_callback_info info) {
    napi_value argv[2];
    Walker* from = walker_call(env, info, 2, argv, "copyGraph(handle, hugePages)");
    if (!from) return nullptr;
    if (!from->region) return fail(env, "the graph is closed");
    CopyJob* job = new CopyJob();
    job->source = from->region;
    napi_get_value_bool(env, argv[1], &job->huge);
    napi_value promise, name;
    napi_create_promise(env, &job->deferred, &promise);
    napi_create_string_utf8(env, "vigil-hnsw-walk.copyGraph", NAPI_AUTO_LENGTH, &name);
    napi_create_async_work(
        env, nullptr, name,
        [](napi_env, void* data) {
            CopyJob* j = static_cast<CopyJob*>(data);
            std::shared_ptr<Region> copy = copy_region(*j->source, j->huge, j->error);
            j->source.reset();
            if (copy) j->walker = open_walker(std::move(copy), "the graph's copy", j->error);
        },
        [](napi_env env, napi_status, void* data) {
            CopyJob* j = static_cast<CopyJob*>(data);
            if (j->walker) {
                napi_resolve_deferred(env, j->deferred, opened(env, j->walker));
            } else {
                napi_value message, error;
                napi_create_string_utf8(env, j->error.c_str(), NAPI_AUTO_LENGTH, &message);
                napi_create_error(env, nullptr, message, &error);
                napi_reject_deferred(env, j->deferred, error);
            }
            napi_delete_async_work(env, j->work);
            delete j;
        },
        job, &job->work);
    napi_queue_async_work(env, job->work);
    return promise;
}

/** closeGraph(handle): frees the graph's memory now; later searches on it throw. */
napi_value CloseGraph(napi_env env, napi_callback_info info) {
    napi_value argv[1];
    Walker* w = walker_call(env, info, 1, argv, "closeGraph(handle)");
    if (w) release(w);
    return nullptr;
}

/**
 * searchGraph(handle, query: Float32Array, k, expansion, lag) -> Float64Array of keys, best first.
 * lag >= 0: the walk above, prefetching `lag` vectors ahead (0 none); -1: usearch's own index_gt::search.
 */
napi_value SearchGraph(napi_env env, napi_callback_info info) {
    napi_value argv[5];
    Walker* w = walker_call(env, info, 5, argv, "searchGraph(handle, query, k, expansion, lag)");
    if (!w) return nullptr;
    napi_typedarray_type type;
    std::size_t length = 0;
    void* qdata = nullptr;
    if (napi_get_typedarray_info(env, argv[1], &type, &length, &qdata, nullptr, nullptr) != napi_ok || type != napi_float32_array)
        return fail(env, "query must be a Float32Array");
    if (length != w->dimensions) return fail(env, "query has " + std::to_string(length) + " values, the graph " + std::to_string(w->dimensions));
    uint32_t k = 0, expansion = 0;
    napi_get_value_uint32(env, argv[2], &k);
    napi_get_value_uint32(env, argv[3], &expansion);
    int32_t lag = 0;
    if (napi_get_value_int32(env, argv[4], &lag) != napi_ok || lag < -1 || lag > 64) return fail(env, "lag must be -1 to 64");
    if (k == 0 || expansion == 0) return fail(env, "k and expansion must be positive");

    std::vector<key_t> keys(k);
    std::size_t found = 0;
    {
        std::lock_guard<std::mutex> guard(w->lock);
        if (!w->region) return fail(env, "the graph is closed");
        byte_t const* q = reinterpret_cast<byte_t const*>(qdata);
        if (w->from_f32 && w->from_f32(q, w->dimensions, w->query.data())) q = w->query.data();
        index_search_config_t config;
        config.expansion = expansion;
        config.thread = 0;
        if (lag >= 0) {
            found = walk(*w, q, k, std::max<std::size_t>(expansion, k), static_cast<std::size_t>(lag), keys.data());
        } else {
            auto result = w->graph->search(q, k, Distance{w}, config, Allow{});
            if (!result) return fail(env, std::string("search failed: ") + result.error.what());
            found = result.dump_to(keys.data(), k);
        }
    }
    napi_value buffer, out;
    void* bytes = nullptr;
    napi_create_arraybuffer(env, found * sizeof(double), &bytes, &buffer);
    double* o = static_cast<double*>(bytes);
    for (std::size_t i = 0; i < found; ++i) o[i] = static_cast<double>(keys[i]);
    napi_create_typedarray(env, napi_float64_array, found, buffer, 0, &out);
    return out;
}

napi_value Init(napi_env env, napi_value exports) {
    napi_value f;
    napi_create_function(env, "openGraph", NAPI_AUTO_LENGTH, OpenGraph, nullptr, &f);
    napi_set_named_property(env, exports, "openGraph", f);
    napi_create_function(env, "searchGraph", NAPI_AUTO_LENGTH, SearchGraph, nullptr, &f);
    napi_set_named_property(env, exports, "searchGraph", f);
    napi_create_function(env, "copyGraph", NAPI_AUTO_LENGTH, CopyGraph, nullptr, &f);
    napi_set_named_property(env, exports, "copyGraph", f);
    napi_create_function(env, "closeGraph", NAPI_AUTO_LENGTH, CloseGraph, nullptr, &f);
    napi_set_named_property(env, exports, "closeGraph", f);
    return exports;
}

}  // namespace

NAPI_MODULE(NODE_GYP_MODULE_NAME, Init)
