// Package auditlog counts the writes one user made to the API server, from
// a kube-apiserver audit log (JSON lines, audit.k8s.io/v1 Events). It is
// how the write budget of kargo-fleet (writes per target during a rollout)
// is measured on a real cluster, where the controller's own client metrics
// cannot tell one Project's writes from another's.
package auditlog

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
)

// Filter selects the audit Events that count.
type Filter struct {
	// User is the username that made the requests, e.g.
	// system:serviceaccount:kargo-fleet:kargo-fleet.
	User string
	// Namespace, when set, counts only requests for objects in it.
	Namespace string
	// From and To bound requestReceivedTimestamp (From included, To
	// excluded); a zero bound is open.
	From, To time.Time
}

// Counts are writes by "verb resource[/subresource]", e.g. "create
// promotions" or "patch fleetrollouts/status".
type Counts map[string]int

// Total is the number of writes counted.
func (c Counts) Total() int {
	n := 0
	for _, v := range c {
		n += v
	}
	return n
}

// String lists the counts, largest first, as "key=n" separated by ", ".
func (c Counts) String() string {
	keys := slices.Sorted(maps.Keys(c))
	slices.SortStableFunc(keys, func(a, b string) int { return c[b] - c[a] })
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, c[k])
	}
	return strings.Join(parts, ", ")
}

// event is the part of an audit Event the count reads.
type event struct {
	Stage     string                    `json:"stage"`
	Verb      string                    `json:"verb"`
	User      struct{ Username string } `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
	} `json:"objectRef"`
	RequestReceived time.Time `json:"requestReceivedTimestamp"`
}

// reads are the verbs that change nothing.
var reads = map[string]bool{"get": true, "list": true, "watch": true}

// CountWrites reads an audit log and counts the writes f selects. Each
// request counts once, at its ResponseComplete (or Panic) stage; lines
// that are not JSON audit Events are an error naming the line.
func CountWrites(r io.Reader, f Filter) (Counts, error) {
	out := Counts{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for line := 1; sc.Scan(); line++ {
		raw := sc.Bytes()
		if len(strings.TrimSpace(string(raw))) == 0 {
			continue
		}
		var e event
		if err := json.Unmarshal(raw, &e); err != nil {
			return nil, fmt.Errorf("line %d: not an audit Event: %w", line, err)
		}
		if !f.selects(&e) {
			continue
		}
		key := e.Verb + " " + e.ObjectRef.Resource
		if e.ObjectRef.Subresource != "" {
			key += "/" + e.ObjectRef.Subresource
		}
		out[key]++
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

func (f Filter) selects(e *event) bool {
	switch {
	case e.Stage != "ResponseComplete" && e.Stage != "Panic":
		return false
	case reads[e.Verb] || e.ObjectRef == nil:
		return false
	case f.User != "" && e.User.Username != f.User:
		return false
	case f.Namespace != "" && e.ObjectRef.Namespace != f.Namespace:
		return false
	case !f.From.IsZero() && e.RequestReceived.Before(f.From):
		return false
	case !f.To.IsZero() && !e.RequestReceived.Before(f.To):
		return false
	}
	return true
}
