// grpc_goclient: a gRPC client on grpc-go (google.golang.org/grpc, pinned by test_grpc.py) that
// makes the calls test_grpc.py::test_go_client checks and prints one line per call:
// "<name> <status code> <message or response>". Its health call is grpc-go's generated
// grpc.health.v1 client; Export is an Invoke of the method path with an empty message.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding/gzip"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
)

const export = "/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export"

func main() {
	addr := flag.String("addr", "", "host:port")
	ca := flag.String("ca", "", "CA certificate (PEM): TLS; else h2c")
	token := flag.String("token", "", "bearer token for Export")
	flag.Parse()
	creds := insecure.NewCredentials()
	if *ca != "" {
		pem, err := os.ReadFile(*ca)
		if err != nil {
			panic(err)
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(pem)
		creds = credentials.NewTLS(&tls.Config{RootCAs: pool})
	}
	conn, err := grpc.NewClient(*addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		panic(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h := healthpb.NewHealthClient(conn)
	r, err := h.Check(ctx, &healthpb.HealthCheckRequest{})
	report("health", r, err)
	r, err = h.Check(ctx, &healthpb.HealthCheckRequest{Service: "grpc.health.v1.Health"}, grpc.UseCompressor(gzip.Name))
	report("health-gzip", r, err)
	r, err = h.Check(ctx, &healthpb.HealthCheckRequest{Service: "nope"})
	report("health-unknown", r, err)
	err = conn.Invoke(ctx, export, &emptypb.Empty{}, &emptypb.Empty{})
	report("export", nil, err)
	tctx := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+*token)
	err = conn.Invoke(tctx, export, &emptypb.Empty{}, &emptypb.Empty{})
	report("export-token", nil, err)
}

func report(name string, r *healthpb.HealthCheckResponse, err error) {
	if err != nil {
		s := status.Convert(err)
		fmt.Printf("%s %s %s\n", name, s.Code(), s.Message())
		return
	}
	if r != nil {
		fmt.Printf("%s OK %s\n", name, r.GetStatus())
		return
	}
	fmt.Printf("%s OK\n", name)
}
