// spanapp: a real OpenTelemetry-traced Go program profiled by the Pyroscope Go SDK (pyroscope-go
// with otel-profiling-go), for tests/integration/test_sdk_spans.py. It pushes its CPU profile to
// -server (POST /ingest, as the SDK does), with CPU work done inside two root spans, so that the
// samples of each span carry the pprof label span_id (and span_name) the SDK's tracer provider sets.
//
// It prints one line per span, "span <name> <16-hex span id> <trace id>", then "pushed" after the
// SDK's last upload (Flush waits for it).
package main

import (
	"context"
	"crypto/sha256"
	"flag"
	"fmt"
	"os"
	"sort"
	"time"

	otelpyroscope "github.com/grafana/otel-profiling-go"
	"github.com/grafana/pyroscope-go"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

var sink []byte

// hashWork and sortWork are the two spans' work: distinct functions, so the flame graph of each
// span names its own.
func hashWork(d time.Duration) {
	h := sha256.New()
	buf := make([]byte, 4096)
	for end := time.Now().Add(d); time.Now().Before(end); {
		h.Write(buf)
		sink = h.Sum(sink[:0])
	}
}

func sortWork(d time.Duration) {
	xs := make([]int, 4096)
	for end := time.Now().Add(d); time.Now().Before(end); {
		for i := range xs {
			xs[i] = (i * 7919) % 4093
		}
		sort.Ints(xs)
	}
}

func main() {
	server := flag.String("server", "http://127.0.0.1:4040", "profstore's URL")
	app := flag.String("app", "spanapp", "application name (service_name)")
	work := flag.Duration("work", 1500*time.Millisecond, "CPU time in each span")
	flag.Parse()

	p, err := pyroscope.Start(pyroscope.Config{
		ApplicationName: *app,
		ServerAddress:   *server,
		Tags:            map[string]string{"env": "test"},
		ProfileTypes:    []pyroscope.ProfileType{pyroscope.ProfileCPU},
		UploadRate:      time.Minute, // one upload, at Flush
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
	otel.SetTracerProvider(otelpyroscope.NewTracerProvider(tp))
	tracer := otel.Tracer("spanapp")

	for _, s := range []struct {
		name string
		fn   func(time.Duration)
	}{{"hash-span", hashWork}, {"sort-span", sortWork}} {
		ctx, span := tracer.Start(context.Background(), s.name) // a root span: its samples get span_id
		sc := span.SpanContext()
		fmt.Printf("span %s %s %s\n", s.name, sc.SpanID(), sc.TraceID())
		s.fn(*work)
		span.End()
		_ = ctx
	}
	p.Flush(true)
	p.Stop()
	_ = tp.Shutdown(context.Background())
	fmt.Println("pushed")
}
