package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
)

// sample is one line of the Prometheus text format.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

// scrape reads the controller's metrics endpoint.
func scrape(url string) ([]sample, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, fmt.Errorf("error scraping %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("error scraping %s: %s", url, resp.Status)
	}
	return parseMetrics(resp.Body)
}

// parseMetrics parses the Prometheus text exposition format, enough for
// counters and gauges: `name{k="v",...} value`.
func parseMetrics(r io.Reader) ([]sample, error) {
	var out []sample
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		s := sample{labels: map[string]string{}}
		var rest string
		if i := strings.IndexByte(line, '{'); i >= 0 {
			j := strings.LastIndexByte(line, '}')
			if j < i {
				return nil, fmt.Errorf("malformed metric line %q", line)
			}
			s.name = line[:i]
			for _, kv := range splitLabels(line[i+1 : j]) {
				k, v, _ := strings.Cut(kv, "=")
				s.labels[k] = strings.Trim(v, `"`)
			}
			rest = line[j+1:]
		} else {
			s.name, rest, _ = strings.Cut(line, " ")
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			continue
		}
		s.value = v
		out = append(out, s)
	}
	return out, sc.Err()
}

// splitLabels splits `a="x",b="y,z"` at the commas outside quotes.
func splitLabels(s string) []string {
	var out []string
	inQuote, start := false, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			inQuote = !inQuote
		case ',':
			if !inQuote {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// writeCounts are the controller's API requests that change something, by
// HTTP method, from client-go's rest_client_requests_total. Reads (GET,
// which includes LIST and WATCH) are left out.
type writeCounts map[string]float64

func writesOf(samples []sample) writeCounts {
	out := writeCounts{}
	for _, s := range samples {
		if s.name == "rest_client_requests_total" && s.labels["method"] != "GET" {
			out[s.labels["method"]] += s.value
		}
	}
	return out
}

func (w writeCounts) total() float64 {
	t := 0.0
	for _, v := range w {
		t += v
	}
	return t
}

// minus returns w - base per method.
func (w writeCounts) minus(base writeCounts) writeCounts {
	out := writeCounts{}
	for k, v := range w {
		if d := v - base[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

func (w writeCounts) String() string {
	keys := make([]string, 0, len(w))
	for k := range w {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %.0f", k, w[k]))
	}
	return strings.Join(parts, ", ")
}

// gauge returns the value of the first sample named name (0 if none).
func gauge(samples []sample, name string) float64 {
	for _, s := range samples {
		if s.name == name {
			return s.value
		}
	}
	return 0
}

// fleetMetrics returns the kargo_fleet_* samples worth reading in a report:
// histogram buckets and zero gauges are left out.
func fleetMetrics(samples []sample) []string {
	var out []string
	for _, s := range samples {
		if !strings.HasPrefix(s.name, "kargo_fleet_") || strings.HasSuffix(s.name, "_bucket") || s.value == 0 {
			continue
		}
		keys := make([]string, 0, len(s.labels))
		for k := range s.labels {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, 0, len(keys))
		for _, k := range keys {
			parts = append(parts, fmt.Sprintf("%s=%q", k, s.labels[k]))
		}
		out = append(out, fmt.Sprintf("%s{%s} %g", s.name, strings.Join(parts, ","), s.value))
	}
	sort.Strings(out)
	return out
}
