// godeltaapp: a Go program profiled by the Pyroscope Go SDK (pyroscope-go, whose heap, mutex and
// block profiles come from its godeltaprof module), for tests/integration/test_sdk_profiles.py.
// It pushes its CPU, heap, mutex and block profiles to -server (POST /ingest, as the SDK does), one
// upload of each at the end (Flush), after a workload whose amounts are exact:
//
//   - main.cpuWork: CPU for -cpu;
//   - main.allocWork: -allocs allocations of 1024 bytes (a size class: no rounding) with every
//     allocation sampled (runtime.MemProfileRate = 1), of which the first -keep stay reachable;
//   - main.mutexWork: -mutexes times, it holds a sync.Mutex until main.mutexWaiter is parked on it,
//     then unlocks it: one contention of main.mutexWork's Unlock in the mutex profile, and one
//     blocking event of main.mutexWaiter in the block profile, each time (fraction and rate 1);
//   - main.blockSend and main.blockRecv: -chans exchanges on an unbuffered channel, each sleeping
//     -sleep before its side: exactly one of the two parks at each exchange, so their block profile
//     counts add up to -chans.
//
// The program waits for its goroutines by polling (no channel or WaitGroup wait of its own enters
// the block profile). It prints "pushed" after the SDK's last upload (Flush waits for it).
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/grafana/pyroscope-go"
)

var (
	keep   [][]byte
	sinkN  int
	buf    = make([]byte, 1<<20)
	active atomic.Int32
)

//go:noinline
func fib(n int) int {
	if n < 2 {
		return n
	}
	return fib(n-1) + fib(n-2)
}

//go:noinline
func cpuWork(d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); {
		sinkN += fib(20)
	}
}

//go:noinline
func allocWork(n, k int) {
	for i := 0; i < n; i++ {
		b := make([]byte, 1024)
		if i < k {
			keep[i] = b
		}
	}
}

// parked reports whether some goroutine waits in sync.Mutex.Lock (the traceback's wait reason).
func parked() bool {
	n := runtime.Stack(buf, true)
	return strings.Contains(string(buf[:n]), "[sync.Mutex.Lock")
}

//go:noinline
func mutexWaiter(mu *sync.Mutex) {
	mu.Lock()
	mu.Unlock()
	active.Add(-1)
}

//go:noinline
func mutexWork(n int) {
	var mu sync.Mutex
	for i := 0; i < n; i++ {
		mu.Lock()
		active.Add(1)
		go mutexWaiter(&mu)
		for !parked() {
			time.Sleep(time.Millisecond)
		}
		mu.Unlock()
		for active.Load() != 0 {
			runtime.Gosched()
		}
	}
}

//go:noinline
func blockSend(ch chan int, n int, sleep time.Duration) {
	for i := 0; i < n; i++ {
		time.Sleep(sleep)
		ch <- i
	}
	active.Add(-1)
}

//go:noinline
func blockRecv(ch chan int, n int, sleep time.Duration) {
	for i := 0; i < n; i++ {
		time.Sleep(sleep)
		<-ch
	}
	active.Add(-1)
}

func main() {
	server := flag.String("server", "http://127.0.0.1:4040", "profstore's URL")
	app := flag.String("app", "godeltaapp", "application name (service_name)")
	cpu := flag.Duration("cpu", time.Second, "CPU time of main.cpuWork")
	allocs := flag.Int("allocs", 1000, "allocations of main.allocWork")
	kept := flag.Int("keep", 100, "of which stay reachable")
	mutexes := flag.Int("mutexes", 20, "contentions of main.mutexWork")
	chans := flag.Int("chans", 50, "channel exchanges of main.blockSend/main.blockRecv")
	sleep := flag.Duration("sleep", time.Millisecond, "sleep before each side of an exchange")
	flag.Parse()

	runtime.MemProfileRate = 1
	runtime.SetMutexProfileFraction(1)
	runtime.SetBlockProfileRate(1)
	keep = make([][]byte, *kept)

	p, err := pyroscope.Start(pyroscope.Config{
		ApplicationName: *app,
		ServerAddress:   *server,
		Tags:            map[string]string{"env": "test"},
		ProfileTypes: []pyroscope.ProfileType{pyroscope.ProfileCPU,
			pyroscope.ProfileAllocObjects, pyroscope.ProfileAllocSpace,
			pyroscope.ProfileInuseObjects, pyroscope.ProfileInuseSpace,
			pyroscope.ProfileMutexCount, pyroscope.ProfileMutexDuration,
			pyroscope.ProfileBlockCount, pyroscope.ProfileBlockDuration},
		UploadRate: time.Minute, // one upload of each, at Flush
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cpuWork(*cpu)
	// no GC cycle starts inside main.allocWork (its start allocates and blocks on the caller's stack)
	gcPercent := debug.SetGCPercent(-1)
	allocWork(*allocs, *kept)
	debug.SetGCPercent(gcPercent)
	mutexWork(*mutexes)
	ch := make(chan int)
	active.Add(2)
	go blockSend(ch, *chans, *sleep)
	go blockRecv(ch, *chans, *sleep)
	for active.Load() != 0 {
		time.Sleep(time.Millisecond)
	}
	// the heap profile is that of the last completed GC cycle: two cycles publish every allocation
	runtime.GC()
	runtime.GC()
	p.Flush(true)
	p.Stop()
	runtime.KeepAlive(keep)
	fmt.Println("pushed")
}
