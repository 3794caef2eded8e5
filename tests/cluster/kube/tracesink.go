// The trace sink: an OTLP/gRPC trace receiver that keeps the API server's own spans of its calls
// to admission webhooks, one JSON line each, and drops every other span. The API server times
// each call to a webhook in a span of nanosecond grain ("Call mutating webhook", "Call validating
// webhook"); its metric of the same calls, apiserver_admission_webhook_admission_duration_seconds,
// has no bucket between 5 and 25 ms, too coarse for a p99 of 10 ms.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"sync"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
)

// webhookCall is one line of the sink's file.
type webhookCall struct {
	Span          string `json:"span"`
	Webhook       string `json:"webhook"`
	Configuration string `json:"configuration"`
	Resource      string `json:"resource"`
	Operation     string `json:"operation"`
	UID           string `json:"uid"`
	StartUnixNano uint64 `json:"start_unix_nano"`
	DurationNano  uint64 `json:"duration_nano"`
	// To the span's "Request completed" event: the HTTP call alone, without the response's
	// checks and the patch's application that the span (and the metric) also hold. Zero when the
	// call failed.
	RequestNano uint64 `json:"request_nano"`
}

type sink struct {
	coltracepb.UnimplementedTraceServiceServer
	mu  sync.Mutex
	out *os.File
}

func (s *sink) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	var lines []byte
	for _, resource := range req.GetResourceSpans() {
		for _, scope := range resource.GetScopeSpans() {
			for _, span := range scope.GetSpans() {
				if call, ok := webhookCallOf(span); ok {
					line, err := json.Marshal(call)
					if err != nil {
						return nil, err
					}
					lines = append(append(lines, line...), '\n')
				}
			}
		}
	}
	if len(lines) == 0 {
		return &coltracepb.ExportTraceServiceResponse{}, nil
	}
	// One write per export under the lock: a reader never sees half a batch's line.
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.out.Write(lines); err != nil {
		return nil, err
	}
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

func webhookCallOf(span *tracepb.Span) (webhookCall, bool) {
	name := span.GetName()
	if name != "Call mutating webhook" && name != "Call validating webhook" {
		return webhookCall{}, false
	}
	start, end := span.GetStartTimeUnixNano(), span.GetEndTimeUnixNano()
	call := webhookCall{Span: name, StartUnixNano: start}
	if end > start {
		call.DurationNano = end - start
	}
	for _, a := range span.GetAttributes() {
		v := a.GetValue().GetStringValue()
		switch a.GetKey() {
		case "webhook":
			call.Webhook = v
		case "configuration":
			call.Configuration = v
		case "resource":
			call.Resource = v
		case "operation":
			call.Operation = v
		case "UID":
			call.UID = v
		}
	}
	for _, e := range span.GetEvents() {
		if e.GetName() == "Request completed" && e.GetTimeUnixNano() > start {
			call.RequestNano = e.GetTimeUnixNano() - start
		}
	}
	return call, true
}

// traceSink runs the sink: `kube trace-sink --listen ADDR --out FILE` (the file is appended to).
func traceSink(args []string) int {
	flags := flag.NewFlagSet("trace-sink", flag.ContinueOnError)
	listen := flags.String("listen", "127.0.0.1:4317", "the address to receive OTLP/gRPC traces on")
	out := flags.String("out", "", "the file the API server's webhook calls are appended to, one JSON line each")
	if err := flags.Parse(args); err != nil {
		return 2
	}
	if *out == "" {
		fmt.Fprintln(os.Stderr, "trace-sink: --out is required")
		return 2
	}
	file, err := os.OpenFile(*out, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		fmt.Fprintf(os.Stderr, "trace-sink: %v\n", err)
		return 1
	}
	listener, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(os.Stderr, "trace-sink: %v\n", err)
		return 1
	}
	server := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(server, &sink{out: file})
	if err := server.Serve(listener); err != nil {
		fmt.Fprintf(os.Stderr, "trace-sink: %v\n", err)
		return 1
	}
	return 0
}
