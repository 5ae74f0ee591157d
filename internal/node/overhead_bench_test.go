package node_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/engine"
	"github.com/skulk/skulk/internal/engine/sample"
	"github.com/skulk/skulk/internal/engine/tokenizer"
)

// BenchmarkFabricOverhead measures, in one run, time to first token and
// per-token latency of the same greedy 64-token story through
// POST /v1/chat/completions on a live node and through the engine called
// directly in process (one engine thread each), alternating the two.
func BenchmarkFabricOverhead(b *testing.B) {
	n := startNode(b, b.TempDir())
	inst := n.place()
	n.waitStatus(inst, "ready")
	m, err := engine.Open(filepath.Join("..", "..", "testdata", "models", "stories260K.gguf"), engine.Options{Threads: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	prompt := m.Tok.Encode("<s>Once upon a time", tokenizer.EncodeOptions{ParseSpecial: true})

	var apiTTFT, apiTok, engTTFT, engTok []float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		var first, last time.Time
		tokens := 0
		res, err := n.stream(context.Background(), storyRequest(true, 64), func(_ int, content string) {
			now := time.Now()
			if content == "" {
				return // the role chunk
			}
			if first.IsZero() {
				first = now
			}
			last = now
			tokens++
		})
		if err != nil || res.content != llamaCppStory {
			b.Fatalf("api: %v %q", err, res.content)
		}
		apiTTFT = append(apiTTFT, ms(first.Sub(start)))
		apiTok = append(apiTok, ms(last.Sub(first))/float64(tokens-1))

		start = time.Now()
		var got []time.Time
		_, err = m.Generate(context.Background(), prompt, engine.GenerateParams{MaxTokens: 64, Sample: sample.Params{}}, func(engine.Token) error {
			got = append(got, time.Now())
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		engTTFT = append(engTTFT, ms(got[0].Sub(start)))
		engTok = append(engTok, ms(got[len(got)-1].Sub(got[0]))/float64(len(got)-1))
	}
	b.StopTimer()
	b.ReportMetric(median(apiTTFT), "api-ttft-ms")
	b.ReportMetric(median(engTTFT), "engine-ttft-ms")
	b.ReportMetric(median(apiTok), "api-ms/token")
	b.ReportMetric(median(engTok), "engine-ms/token")
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func median(x []float64) float64 {
	s := append([]float64(nil), x...)
	sort.Float64s(s)
	return s[len(s)/2]
}

// BenchmarkShortRequests measures the request path's throughput: 8
// keep-alive clients send chat requests for one token (max_tokens 1) of the
// demo model as fast as they are answered. It reports requests per second
// and the median and p99 latency of one request.
func BenchmarkShortRequests(b *testing.B) {
	n := startNode(b, b.TempDir())
	inst := n.place()
	n.waitStatus(inst, "ready")
	body, _ := json.Marshal(storyRequest(false, 1))
	const clients = 8
	var mu sync.Mutex
	var lat []float64
	next := make(chan struct{})
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
			defer c.CloseIdleConnections()
			for range next {
				t0 := time.Now()
				resp, err := c.Post(n.base+"/v1/chat/completions", "application/json", bytes.NewReader(body))
				if err != nil {
					b.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					b.Errorf("status %d", resp.StatusCode)
				}
				mu.Lock()
				lat = append(lat, ms(time.Since(t0)))
				mu.Unlock()
			}
		}()
	}
	for i := 0; i < b.N; i++ {
		next <- struct{}{}
	}
	close(next)
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	sort.Float64s(lat)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
	b.ReportMetric(lat[len(lat)/2], "p50-ms")
	b.ReportMetric(lat[len(lat)*99/100], "p99-ms")
}
