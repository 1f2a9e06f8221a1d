// debuginfo_goclient: uploads a debug file to profstore as Grafana Alloy's pyroscope.ebpf does
// (its reporter's PyroscopeSymbolUploader.attemptUpload and write/debuginfoclient.Client.Upload),
// on Pyroscope's generated connect-go client (github.com/grafana/pyroscope/api, pinned by
// test_debuginfo_upload.py): ShouldInitiateUpload, then when told to the file as the raw body of
// POST /debuginfo.v1alpha1.DebuginfoService/Upload/<build id> (an io.SectionReader: no
// Content-Length, chunked), then UploadFinished. Also list and delete. Prints one line per call:
// "<call> <result>"; a Connect error as "<call> error <code> <message>".
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"connectrpc.com/connect"
	debuginfov1alpha1 "github.com/grafana/pyroscope/api/gen/proto/go/debuginfo/v1alpha1"
	"github.com/grafana/pyroscope/api/gen/proto/go/debuginfo/v1alpha1/debuginfov1alpha1connect"
)

type tokenTransport struct{ token string }

func (t tokenTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if t.token != "" {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+t.token)
	}
	return http.DefaultTransport.RoundTrip(r)
}

func connectErr(call string, err error) {
	if ce, ok := err.(*connect.Error); ok {
		fmt.Printf("%s error %s %s\n", call, ce.Code(), ce.Message())
		return
	}
	fmt.Printf("%s error %v\n", call, err)
}

func main() {
	base := flag.String("url", "", "profstore's base URL")
	file := flag.String("file", "", "the file to upload")
	buildID := flag.String("build-id", "", "its GNU build id (hex)")
	name := flag.String("name", "", "FileMetadata.name")
	noText := flag.Bool("no-text", false, "TYPE_EXECUTABLE_NO_TEXT (Alloy's strip_text_section)")
	jsonCodec := flag.Bool("json", false, "the Connect JSON codec (default: protobuf, as Alloy)")
	token := flag.String("token", "", "bearer token")
	op := flag.String("op", "upload", "upload, should, post, finished, list, delete")
	flag.Parse()

	hc := &http.Client{Transport: tokenTransport{*token}, Timeout: 120 * time.Second}
	var opts []connect.ClientOption
	if *jsonCodec {
		opts = append(opts, connect.WithProtoJSON())
	}
	client := debuginfov1alpha1connect.NewDebuginfoServiceClient(hc, *base, opts...)
	ctx := context.Background()

	should := func() bool {
		fileType := debuginfov1alpha1.FileMetadata_TYPE_EXECUTABLE_FULL
		if *noText {
			fileType = debuginfov1alpha1.FileMetadata_TYPE_EXECUTABLE_NO_TEXT
		}
		resp, err := client.ShouldInitiateUpload(ctx, connect.NewRequest(&debuginfov1alpha1.ShouldInitiateUploadRequest{
			File: &debuginfov1alpha1.FileMetadata{
				GnuBuildId: *buildID,
				OtelFileId: "otel-" + *buildID,
				Name:       *name,
				Type:       fileType,
			},
		}))
		if err != nil {
			connectErr("should", err)
			return false
		}
		fmt.Printf("should %v %s\n", resp.Msg.ShouldInitiateUpload, resp.Msg.Reason)
		return resp.Msg.ShouldInitiateUpload
	}
	post := func() bool {
		f, err := os.Open(*file)
		if err != nil {
			fmt.Printf("post error %v\n", err)
			return false
		}
		defer f.Close()
		st, _ := f.Stat()
		r := io.NewSectionReader(f, 0, st.Size())
		uploadURL := strings.TrimRight(*base, "/") + "/debuginfo.v1alpha1.DebuginfoService/Upload/" + url.PathEscape(*buildID)
		req, err := http.NewRequestWithContext(ctx, "POST", uploadURL, r)
		if err != nil {
			fmt.Printf("post error %v\n", err)
			return false
		}
		resp, err := hc.Do(req)
		if err != nil {
			fmt.Printf("post error %v\n", err)
			return false
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Printf("post %d %s\n", resp.StatusCode, strings.TrimRight(string(body), "\n"))
		return resp.StatusCode == http.StatusOK
	}
	finished := func() bool {
		_, err := client.UploadFinished(ctx, connect.NewRequest(&debuginfov1alpha1.UploadFinishedRequest{GnuBuildId: *buildID}))
		if err != nil {
			connectErr("finished", err)
			return false
		}
		fmt.Printf("finished ok\n")
		return true
	}

	switch *op {
	case "upload": // Alloy's order: each step only when the one before succeeded
		if should() && post() {
			finished()
		}
	case "should":
		should()
	case "post":
		post()
	case "finished":
		finished()
	case "list":
		resp, err := client.ListDebuginfo(ctx, connect.NewRequest(&debuginfov1alpha1.ListDebuginfoRequest{}))
		if err != nil {
			connectErr("list", err)
			return
		}
		for _, o := range resp.Msg.Object {
			fmt.Printf("list %s name=%s type=%s otel=%s state=%s size=%d started=%v finished=%v\n",
				o.File.GetGnuBuildId(), o.File.GetName(), o.File.GetType(), o.File.GetOtelFileId(), o.State,
				o.SizeBytes, o.StartedAt != nil, o.FinishedAt != nil)
		}
	case "delete":
		_, err := client.DeleteDebuginfo(ctx, connect.NewRequest(&debuginfov1alpha1.DeleteDebuginfoRequest{GnuBuildId: *buildID}))
		if err != nil {
			connectErr("delete", err)
			return
		}
		fmt.Printf("delete ok\n")
	}
}
