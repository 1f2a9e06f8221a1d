// gotarget is the Go program the integration tests scrape, and the one whose profiles the
// fixtures in tests/testdata/pprof/go are made from (tests/testdata/make.sh). It keeps a small,
// mixed workload running so that every profile Go serves has real content, and it serves:
//
//	/debug/pprof/...   net/http/pprof on a mux of its own: profile?seconds=N (CPU), heap[?gc=1],
//	                   allocs, goroutine, block, mutex, threadcreate, trace, cmdline, symbol, index
//	/metrics           Prometheus text format 0.0.4, written by hand (see writeMetrics)
//	/healthz           "ok\n"
//
// The workload:
//
//	CPU       six kernels (fib, sha256, sort, matmul, format, compress); -workload-seed picks 3 or
//	          4 of them, their weights and the frames they are called through (the plan, logged
//	          at start), so targets with different seeds have different stacks. Every kernel call
//	          carries the pprof labels kernel=<name>, worker=<n>, seed=<seed>.
//	heap      byte slices and maps, about one in eight kept in a ring (in-use memory)
//	block     a producer on an unbuffered channel to a slow consumer; goroutines parked forever
//	mutex     workers hashing under one sync.Mutex; readers and a writer on a sync.RWMutex map
//
// Standard library only, so it builds offline: go build -trimpath -o gotarget . (with -trimpath
// the frames read gotarget/main.go and runtime/..., not the build machine's paths).
// It stops on SIGINT/SIGTERM, or after -duration.
package main

import (
	"bytes"
	"compress/flate"
	"context"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"log"
	"math/rand"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"runtime"
	rpprof "runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

type options struct {
	addr                 string
	seed                 int64
	cpu, alloc, mutex    int
	idle                 int
	duty                 int
	blockRate, mutexFrac int
	duration             time.Duration
}

func flags() options {
	var o options
	flag.StringVar(&o.addr, "addr", "127.0.0.1:6060", "`host:port` to serve /debug/pprof/, /metrics and /healthz on")
	flag.Int64Var(&o.seed, "workload-seed", 1, "picks the CPU kernels, their weights and call frames")
	flag.IntVar(&o.cpu, "cpu-workers", 2, "goroutines running the CPU kernels")
	flag.IntVar(&o.alloc, "alloc-workers", 1, "goroutines allocating slices and maps")
	flag.IntVar(&o.mutex, "mutex-workers", 4, "goroutines taking turns on one sync.Mutex")
	flag.IntVar(&o.idle, "idle-waiters", 8, "goroutines parked on a channel until exit")
	flag.IntVar(&o.duty, "duty", 30, "`percent` of every 10 ms a CPU worker computes (1-100)")
	flag.IntVar(&o.blockRate, "block-rate", 1, "runtime.SetBlockProfileRate (ns; 0 turns the block profile off)")
	flag.IntVar(&o.mutexFrac, "mutex-fraction", 1, "runtime.SetMutexProfileFraction (0 turns the mutex profile off)")
	flag.DurationVar(&o.duration, "duration", 0, "stop after this long (0: at SIGINT/SIGTERM)")
	flag.Parse()
	if o.duty < 1 {
		o.duty = 1
	} else if o.duty > 100 {
		o.duty = 100
	}
	return o
}

// ---- counters and /metrics -----------------------------------------------------------------

// kernelNames are the values of the kernel label (pprof and metrics); kernelFns is in the same order.
var kernelNames = [...]string{"fib", "sha256", "sort", "matmul", "format", "compress"}

var (
	kernelRuns   [len(kernelNames)]atomic.Uint64
	bytesAlloc   atomic.Uint64
	chanMessages atomic.Uint64
	mutexTakes   atomic.Uint64
	metricsReqs  atomic.Uint64
	started      = time.Now()
)

// writeMetrics answers /metrics: five counters and three gauges (names, types and labels are what
// the tests and the Prometheus fixtures rely on).
func writeMetrics(w http.ResponseWriter, _ *http.Request) {
	var b bytes.Buffer
	family := func(name, typ, help string) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
	}
	family("gotarget_kernel_iterations_total", "counter", "Calls of each CPU kernel.")
	for i, k := range kernelNames {
		fmt.Fprintf(&b, "gotarget_kernel_iterations_total{kernel=\"%s\"} %d\n", k, kernelRuns[i].Load())
	}
	family("gotarget_allocated_bytes_total", "counter", "Bytes the allocation workers asked for.")
	fmt.Fprintf(&b, "gotarget_allocated_bytes_total %d\n", bytesAlloc.Load())
	family("gotarget_channel_messages_total", "counter", "Values sent from the producer to the slow consumer.")
	fmt.Fprintf(&b, "gotarget_channel_messages_total %d\n", chanMessages.Load())
	family("gotarget_mutex_acquisitions_total", "counter", "Times a mutex worker took the shared mutex.")
	fmt.Fprintf(&b, "gotarget_mutex_acquisitions_total %d\n", mutexTakes.Load())
	family("gotarget_metrics_requests_total", "counter", "Requests to /metrics, this one included.")
	fmt.Fprintf(&b, "gotarget_metrics_requests_total %d\n", metricsReqs.Add(1))

	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	family("gotarget_goroutines", "gauge", "Goroutines that exist now.")
	fmt.Fprintf(&b, "gotarget_goroutines %d\n", runtime.NumGoroutine())
	family("gotarget_heap_inuse_bytes", "gauge", "Bytes in in-use heap spans (runtime.MemStats.HeapInuse).")
	fmt.Fprintf(&b, "gotarget_heap_inuse_bytes %d\n", ms.HeapInuse)
	family("gotarget_uptime_seconds", "gauge", "Seconds since the program started.")
	fmt.Fprintf(&b, "gotarget_uptime_seconds %s\n", strconv.FormatFloat(time.Since(started).Seconds(), 'g', -1, 64))

	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	_, _ = w.Write(b.Bytes())
}

// ---- CPU kernels: each does a bounded piece of work; the result goes to sink ----------------

var sink atomic.Uint64

func fibonacci(n int) int {
	if n <= 1 {
		return n
	}
	return fibonacci(n-2) + fibonacci(n-1)
}

func kernelFib(r *rand.Rand) uint64 { return uint64(fibonacci(21 + r.Intn(5))) }

func kernelSHA256(r *rand.Rand) uint64 {
	block := make([]byte, 4<<10)
	r.Read(block)
	for round := 0; round < 120; round++ {
		d := sha256.Sum256(block)
		copy(block[round%len(block):], d[:])
	}
	return uint64(block[0])
}

func kernelSort(r *rand.Rand) uint64 {
	v := make([]int, 4096+r.Intn(2048))
	for i := range v {
		v[i] = r.Int()
	}
	sort.Ints(v)
	return uint64(v[0] ^ v[len(v)-1])
}

func kernelMatmul(r *rand.Rand) uint64 {
	const n = 64
	var a, b, c [n][n]float64
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			a[i][j], b[i][j] = r.Float64(), r.Float64()
		}
	}
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			var s float64
			for k := 0; k < n; k++ {
				s += a[i][k] * b[k][j]
			}
			c[i][j] = s
		}
	}
	return uint64(c[n/2][n/3] * 1e6)
}

func kernelFormat(r *rand.Rand) uint64 {
	parts := make([]string, 0, 1500)
	for i := 0; i < cap(parts); i++ {
		parts = append(parts, fmt.Sprintf("%x", r.Uint32()))
	}
	var total uint64
	for _, p := range strings.Split(strings.Join(parts, ";"), ";") {
		v, err := strconv.ParseUint(p, 16, 64)
		if err == nil {
			total += v
		}
	}
	return total
}

var compressWords = []string{"scrape", "profile", "sample", "series", "label", "stack", "frame", "chunk"}

func kernelCompress(r *rand.Rand) uint64 {
	var text bytes.Buffer
	for text.Len() < 6<<10 {
		text.WriteString(compressWords[r.Intn(len(compressWords))])
		text.WriteByte('\n')
	}
	var out bytes.Buffer
	fw, err := flate.NewWriter(&out, flate.DefaultCompression)
	if err != nil {
		return 0
	}
	_, _ = fw.Write(text.Bytes())
	_ = fw.Close()
	return uint64(out.Len())
}

var kernelFns = [len(kernelNames)]func(*rand.Rand) uint64{kernelFib, kernelSHA256, kernelSort, kernelMatmul,
	kernelFormat, kernelCompress}

// The frames between a worker and a kernel (kept out of inlining so profiles show them): the plan
// gives each kernel one of these, so the seed changes the middle of the stacks too.

//go:noinline
func viaServeRequest(k func(*rand.Rand) uint64, r *rand.Rand) uint64 { return k(r) }

//go:noinline
func viaBatch(k func(*rand.Rand) uint64, r *rand.Rand) uint64 { return viaBatchItem(k, r) }

//go:noinline
func viaBatchItem(k func(*rand.Rand) uint64, r *rand.Rand) uint64 { return k(r) }

//go:noinline
func viaTimer(k func(*rand.Rand) uint64, r *rand.Rand) uint64 { return k(r) }

var frames = [...]func(func(*rand.Rand) uint64, *rand.Rand) uint64{viaServeRequest, viaBatch, viaTimer}

// ---- the plan ---------------------------------------------------------------------------------

// splitmix is the SplitMix64 sequence: a fixed, documented function of the seed (the plan must
// not change with the Go version's math/rand).
type splitmix uint64

func (s *splitmix) next() uint64 {
	*s += 0x9e3779b97f4a7c15
	z := uint64(*s)
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

type plan struct {
	slots []int                 // kernel indexes, each repeated by its weight; a worker picks one at random
	frame [len(kernelNames)]int // index in frames of each kernel
}

// makePlan: every kernel draws a key, the 3 or 4 lowest keys run, each with a weight of 1 to 4;
// every kernel draws its frame.
func makePlan(seed int64) plan {
	s := splitmix(seed)
	n := 3 + int(s.next()%2)
	var keys [len(kernelNames)]uint64
	order := make([]int, len(kernelNames))
	for i := range order {
		order[i], keys[i] = i, s.next()
	}
	sort.Slice(order, func(a, b int) bool { return keys[order[a]] < keys[order[b]] })
	var p plan
	for _, k := range order[:n] {
		for w := 1 + int(s.next()%4); w > 0; w-- {
			p.slots = append(p.slots, k)
		}
	}
	for k := range p.frame {
		p.frame[k] = int(s.next() % uint64(len(frames)))
	}
	return p
}

// String: "name(w=W,via=F) ..." by kernel name.
func (p plan) String() string {
	var w [len(kernelNames)]int
	for _, k := range p.slots {
		w[k]++
	}
	var out []string
	for k, n := range w {
		if n > 0 {
			out = append(out, fmt.Sprintf("%s(w=%d,via=%d)", kernelNames[k], n, p.frame[k]))
		}
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

// ---- workers --------------------------------------------------------------------------------

// cpuWorker computes for duty % of every 10 ms and sleeps the rest.
func cpuWorker(ctx context.Context, id int, o options, p plan) {
	r := rand.New(rand.NewSource(o.seed<<10 | int64(id)))
	busy := time.Duration(o.duty) * 10 * time.Millisecond / 100
	seed, worker := strconv.FormatInt(o.seed, 10), strconv.Itoa(id)
	for ctx.Err() == nil {
		for end := time.Now().Add(busy); time.Now().Before(end); {
			k := p.slots[r.Intn(len(p.slots))]
			rpprof.Do(ctx, rpprof.Labels("kernel", kernelNames[k], "worker", worker, "seed", seed), func(context.Context) {
				sink.Add(frames[p.frame[k]](kernelFns[k], r))
			})
			kernelRuns[k].Add(1)
		}
		if busy < 10*time.Millisecond {
			time.Sleep(10*time.Millisecond - busy)
		}
	}
}

//go:noinline
func makeSlice(r *rand.Rand) []byte {
	n := 1 << (10 + r.Intn(6)) // 1 to 32 KiB
	b := make([]byte, n)
	b[n-1] = 1
	bytesAlloc.Add(uint64(n))
	return b
}

//go:noinline
func makeMap(r *rand.Rand) map[int]string {
	n := 16 + r.Intn(112)
	m := make(map[int]string, n)
	for i := 0; i < n; i++ {
		m[i] = strconv.Itoa(i * 31)
	}
	bytesAlloc.Add(uint64(n) * 40) // an estimate: key, string header, bucket share
	return m
}

// allocWorker allocates without pause for 64 allocations, then sleeps 1 ms; one allocation in
// eight replaces a random entry of a 256-entry ring, which is what the heap profile shows in use.
func allocWorker(ctx context.Context, id int, seed int64) {
	r := rand.New(rand.NewSource(seed*1_000_003 + int64(id)))
	var ring [256]interface{}
	for i := 1; ctx.Err() == nil; i++ {
		var v interface{}
		if i&1 == 0 {
			v = makeSlice(r)
		} else {
			v = makeMap(r)
		}
		if r.Intn(8) == 0 {
			ring[r.Intn(len(ring))] = v
		}
		if i%64 == 0 {
			time.Sleep(time.Millisecond)
		}
	}
}

// producer blocks in the channel send most of the time: the consumer sleeps 2 ms per value.
func producer(ctx context.Context, ch chan<- uint64) {
	for v := uint64(0); ; v++ {
		select {
		case ch <- v:
			chanMessages.Add(1)
		case <-ctx.Done():
			return
		}
	}
}

func consumer(ctx context.Context, ch <-chan uint64) {
	for {
		select {
		case v := <-ch:
			sink.Add(v)
			time.Sleep(2 * time.Millisecond)
		case <-ctx.Done():
			return
		}
	}
}

// parked: a group of goroutines with one and the same stack (goroutine profile).
func parked(release <-chan struct{}) { <-release }

// guarded: the mutex workers hash under its lock, so the others wait (mutex and block profiles).
type guarded struct {
	mu    sync.Mutex
	state [256]byte
	total uint64
}

//go:noinline
func (g *guarded) stir(r *rand.Rand) {
	g.mu.Lock()
	defer g.mu.Unlock()
	r.Read(g.state[:])
	d := sha256.Sum256(g.state[:])
	g.total += uint64(d[1])
}

func mutexWorker(ctx context.Context, id int, g *guarded) {
	r := rand.New(rand.NewSource(int64(id) + 77))
	for i := 1; ctx.Err() == nil; i++ {
		g.stir(r)
		mutexTakes.Add(1)
		if i%32 == 0 {
			time.Sleep(time.Millisecond)
		}
	}
}

// table: two readers and a writer that rebuilds it every 5 ms, on a sync.RWMutex (a second kind of
// stack in the mutex profile, present even with one mutex worker).
type table struct {
	mu sync.RWMutex
	m  map[int]string
}

//go:noinline
func (t *table) lookup(k int) int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.m[k])
}

//go:noinline
func (t *table) rebuild(r *rand.Rand) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.m = make(map[int]string, 512)
	for i := 0; i < 512; i++ {
		t.m[i] = strconv.FormatUint(r.Uint64(), 36)
	}
}

func tableReader(ctx context.Context, t *table) {
	for i := 1; ctx.Err() == nil; i++ {
		sink.Add(uint64(t.lookup(i & 1023)))
		if i%32 == 0 {
			time.Sleep(time.Millisecond)
		}
	}
}

func tableWriter(ctx context.Context, t *table) {
	r := rand.New(rand.NewSource(5))
	for ctx.Err() == nil {
		t.rebuild(r)
		time.Sleep(5 * time.Millisecond)
	}
}

// ---- main -----------------------------------------------------------------------------------

func routes() *http.ServeMux {
	mux := http.NewServeMux()
	// pprof.Index serves the index and every named profile (heap, allocs, goroutine, block,
	// mutex, threadcreate) under /debug/pprof/<name>; the other four have handlers of their own.
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/metrics", writeMetrics)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	return mux
}

func main() {
	o := flags()
	log.SetFlags(log.LstdFlags)
	log.SetPrefix("gotarget: ")
	runtime.SetBlockProfileRate(o.blockRate)
	runtime.SetMutexProfileFraction(o.mutexFrac)

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if o.duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.duration)
		defer cancel()
	}

	p := makePlan(o.seed)
	log.Printf("seed=%d plan: %s", o.seed, p)

	var wg sync.WaitGroup
	run := func(f func()) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f()
		}()
	}
	for i := 0; i < o.cpu; i++ {
		id := i
		run(func() { cpuWorker(ctx, id, o, p) })
	}
	for i := 0; i < o.alloc; i++ {
		id := i
		run(func() { allocWorker(ctx, id, o.seed) })
	}
	ch := make(chan uint64)
	run(func() { producer(ctx, ch) })
	run(func() { consumer(ctx, ch) })
	release := make(chan struct{})
	for i := 0; i < o.idle; i++ {
		run(func() { parked(release) })
	}
	g := &guarded{}
	for i := 0; i < o.mutex; i++ {
		id := i
		run(func() { mutexWorker(ctx, id, g) })
	}
	t := &table{m: map[int]string{}}
	run(func() { tableWriter(ctx, t) })
	run(func() { tableReader(ctx, t) })
	run(func() { tableReader(ctx, t) })

	srv := &http.Server{Addr: o.addr, Handler: routes(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		c, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(c)
	}()
	log.Printf("serving http://%s/debug/pprof/, /metrics and /healthz", o.addr)
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Printf("listen: %v", err)
		os.Exit(1)
	}
	close(release)
	wg.Wait()
	log.Printf("stopped")
}
