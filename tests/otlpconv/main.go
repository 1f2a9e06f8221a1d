// otlpconv converts a pprof profile into an OTLP ExportProfilesServiceRequest with the
// OpenTelemetry Collector's pdata (go.opentelemetry.io/collector/pdata/pprofile, which speaks
// opentelemetry-proto v1.10's wire), as the Collector's pprof receivers do: one OTLP profile per
// sample type, one dictionary, string labels as sample attributes, build ids as the mapping
// attribute process.executable.build_id.gnu. It writes the request (binary protobuf, or OTLP
// JSON with -json) to stdout, or POSTs it with -post URL and prints the answer's status and body.
//
//	go run . -service api [-json] [-time NS] [-post http://127.0.0.1:7070/v1development/profiles] profile.pb.gz
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"

	"github.com/google/pprof/profile"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"
)

type conv struct {
	dict  pprofile.ProfilesDictionary
	strs  map[string]int32
	attrs map[[2]string]int32
	fns   map[uint64]int32
	maps  map[uint64]int32
	locs  map[uint64]int32
	stk   map[string]int32
}

func (c *conv) str(s string) int32 {
	if i, ok := c.strs[s]; ok {
		return i
	}
	i := int32(c.dict.StringTable().Len())
	c.dict.StringTable().Append(s)
	c.strs[s] = i
	return i
}

func (c *conv) attr(k, v string) int32 {
	if i, ok := c.attrs[[2]string{k, v}]; ok {
		return i
	}
	a := c.dict.AttributeTable().AppendEmpty()
	a.SetKeyStrindex(c.str(k))
	a.Value().SetStr(v)
	i := int32(c.dict.AttributeTable().Len() - 1)
	c.attrs[[2]string{k, v}] = i
	return i
}

func (c *conv) mapping(m *profile.Mapping) int32 {
	if m == nil {
		return 0
	}
	if i, ok := c.maps[m.ID]; ok {
		return i
	}
	om := c.dict.MappingTable().AppendEmpty()
	om.SetMemoryStart(m.Start)
	om.SetMemoryLimit(m.Limit)
	om.SetFileOffset(m.Offset)
	om.SetFilenameStrindex(c.str(m.File))
	if m.BuildID != "" {
		om.AttributeIndices().Append(c.attr("process.executable.build_id.gnu", m.BuildID))
	}
	i := int32(c.dict.MappingTable().Len() - 1)
	c.maps[m.ID] = i
	return i
}

func (c *conv) function(f *profile.Function) int32 {
	if f == nil {
		return 0
	}
	if i, ok := c.fns[f.ID]; ok {
		return i
	}
	of := c.dict.FunctionTable().AppendEmpty()
	of.SetNameStrindex(c.str(f.Name))
	of.SetSystemNameStrindex(c.str(f.SystemName))
	of.SetFilenameStrindex(c.str(f.Filename))
	of.SetStartLine(f.StartLine)
	i := int32(c.dict.FunctionTable().Len() - 1)
	c.fns[f.ID] = i
	return i
}

func (c *conv) location(l *profile.Location) int32 {
	if i, ok := c.locs[l.ID]; ok {
		return i
	}
	ol := c.dict.LocationTable().AppendEmpty()
	ol.SetMappingIndex(c.mapping(l.Mapping))
	ol.SetAddress(l.Address)
	for _, ln := range l.Line {
		x := ol.Lines().AppendEmpty()
		x.SetFunctionIndex(c.function(ln.Function))
		x.SetLine(ln.Line)
		x.SetColumn(ln.Column)
	}
	i := int32(c.dict.LocationTable().Len() - 1)
	c.locs[l.ID] = i
	return i
}

func (c *conv) stack(locs []*profile.Location) int32 {
	idx := make([]int32, len(locs))
	key := ""
	for k, l := range locs {
		idx[k] = c.location(l)
		key += fmt.Sprintf("%d,", idx[k])
	}
	if i, ok := c.stk[key]; ok {
		return i
	}
	s := c.dict.StackTable().AppendEmpty()
	s.LocationIndices().FromRaw(idx)
	i := int32(c.dict.StackTable().Len() - 1)
	c.stk[key] = i
	return i
}

func convert(p *profile.Profile, service string, timeNs int64) pprofile.Profiles {
	out := pprofile.NewProfiles()
	c := &conv{dict: out.Dictionary(), strs: map[string]int32{}, attrs: map[[2]string]int32{},
		fns: map[uint64]int32{}, maps: map[uint64]int32{}, locs: map[uint64]int32{}, stk: map[string]int32{}}
	// entry 0 of every table: the zero value
	c.str("")
	c.dict.MappingTable().AppendEmpty()
	c.dict.LocationTable().AppendEmpty()
	c.dict.FunctionTable().AppendEmpty()
	c.dict.LinkTable().AppendEmpty()
	c.dict.AttributeTable().AppendEmpty()
	c.dict.StackTable().AppendEmpty()
	rp := out.ResourceProfiles().AppendEmpty()
	rp.Resource().Attributes().PutStr("service.name", service)
	sp := rp.ScopeProfiles().AppendEmpty()
	sp.Scope().SetName("otlpconv")
	if timeNs == 0 {
		timeNs = p.TimeNanos
	}
	for ti, st := range p.SampleType {
		op := sp.Profiles().AppendEmpty()
		op.SampleType().SetTypeStrindex(c.str(st.Type))
		op.SampleType().SetUnitStrindex(c.str(st.Unit))
		if p.PeriodType != nil {
			op.PeriodType().SetTypeStrindex(c.str(p.PeriodType.Type))
			op.PeriodType().SetUnitStrindex(c.str(p.PeriodType.Unit))
		}
		op.SetPeriod(p.Period)
		op.SetTime(pcommon.Timestamp(timeNs))
		op.SetDurationNano(uint64(p.DurationNanos))
		for _, s := range p.Sample {
			os := op.Samples().AppendEmpty()
			os.SetStackIndex(c.stack(s.Location))
			os.Values().Append(s.Value[ti])
			for k, vs := range s.Label {
				for _, v := range vs {
					os.AttributeIndices().Append(c.attr(k, v))
				}
			}
		}
	}
	return out
}

func main() {
	service := flag.String("service", "otlpconv", "service.name of the resource")
	asJSON := flag.Bool("json", false, "OTLP JSON instead of binary protobuf")
	timeNs := flag.Int64("time", 0, "time_unix_nano of every profile (default: the pprof's)")
	post := flag.String("post", "", "POST the request to this URL")
	flag.Parse()
	f, err := os.Open(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	p, err := profile.Parse(f)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	req := pprofileotlp.NewExportRequestFromProfiles(convert(p, *service, *timeNs))
	var body []byte
	ct := "application/x-protobuf"
	if *asJSON {
		body, err = req.MarshalJSON()
		ct = "application/json"
	} else {
		body, err = req.MarshalProto()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if *post == "" {
		os.Stdout.Write(body)
		return
	}
	resp, err := http.Post(*post, ct, bytes.NewReader(body))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	rb, _ := io.ReadAll(resp.Body)
	fmt.Printf("%d %s\n", resp.StatusCode, rb)
}
