// The demo target of docker/compose.yml: a Go program that burns some CPU and allocates, so that
// profstore's scraper (net/http/pprof's /debug/pprof/*) and Prometheus (/metrics, written by hand:
// standard library only, so it builds offline) both have something to show.
package main

import (
	"crypto/sha256"
	"flag"
	"fmt"
	"log"
	"net/http"
	"net/http/pprof"
	"sort"
	"sync/atomic"
	"time"
)

var hashed, sorted, allocated atomic.Uint64

// Two CPU paths of different weight, so the flame graph has a shape: hashing 40 blocks of 4 KiB
// takes about twice as long as sorting 2,000 ints (measured with Go 1.19: ~440 us and ~190 us).
func hashBlocks(buf []byte) {
	for i := 0; i < 40; i++ {
		sum := sha256.Sum256(buf)
		buf[i%len(buf)] ^= sum[0]
	}
	hashed.Add(40)
}

func sortInts(n int) {
	xs := make([]int, n)
	for i := range xs {
		xs[i] = (i * 7919) % n
	}
	sort.Ints(xs)
	sorted.Add(1)
}

// Keeps a rolling window of buffers so that the heap profile's inuse_space stays above zero.
func allocate(keep [][]byte, i int) {
	keep[i%len(keep)] = make([]byte, 64<<10)
	allocated.Add(64 << 10)
}

// work runs for busy of every 10 ms: the demo takes a fraction of a core, not all of it.
func work(busy time.Duration) {
	buf := make([]byte, 4096)
	keep := make([][]byte, 64)
	for i := 0; ; i++ {
		until := time.Now().Add(busy)
		for time.Now().Before(until) {
			hashBlocks(buf)
			sortInts(2000)
		}
		allocate(keep, i)
		time.Sleep(10*time.Millisecond - busy)
	}
}

func metrics(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	fmt.Fprintf(w, "# TYPE demo_hashed_blocks_total counter\ndemo_hashed_blocks_total %d\n", hashed.Load())
	fmt.Fprintf(w, "# TYPE demo_sorts_total counter\ndemo_sorts_total %d\n", sorted.Load())
	fmt.Fprintf(w, "# TYPE demo_allocated_bytes_total counter\ndemo_allocated_bytes_total %d\n", allocated.Load())
}

func main() {
	addr := flag.String("addr", ":6060", "listen address")
	busy := flag.Duration("busy", 3*time.Millisecond, "CPU time burnt in each 10ms (at most 10ms)")
	flag.Parse()
	if *busy <= 0 || *busy > 10*time.Millisecond {
		log.Fatalf("-busy %v: must be in (0, 10ms]", *busy)
	}
	go work(*busy)
	// an own mux with pprof's handlers: importing net/http/pprof for its side effect on
	// http.DefaultServeMux would work too, but this way the routes are all in sight
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/metrics", metrics)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	log.Printf("demo: listening on %s", *addr)
	log.Fatal(http.ListenAndServe(*addr, mux))
}
