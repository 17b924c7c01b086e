package dashboard

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// DefaultMaxStreams is how many event streams (open FleetStage pages) the
// dashboard serves at once unless Options.MaxStreams says otherwise. Each
// stream rebuilds its page on every change; a person has a few tabs open,
// so more than this is a runaway client, answered 503.
const DefaultMaxStreams = 32

// contentSecurityPolicy lets the page load its own script, stylesheet and
// API only. Scripts run from /static only (the page has no inline script).
// Style attributes stay allowed (style-src-attr): the server renders bar and
// meter widths as style="width:N%", escaped by html/template; style
// elements and stylesheets from anywhere else are not. frame-ancestors
// refuses every frame, as X-Frame-Options does for older browsers.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; " +
	"style-src-attr 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; " +
	"form-action 'none'; frame-ancestors 'none'"

// securityHeaders are set on every response.
var securityHeaders = map[string]string{
	"Content-Security-Policy":      contentSecurityPolicy,
	"X-Content-Type-Options":       "nosniff",
	"X-Frame-Options":              "DENY",
	"Referrer-Policy":              "same-origin",
	"Cross-Origin-Resource-Policy": "same-origin",
	"Cross-Origin-Opener-Policy":   "same-origin",
}

// hostPolicy is the Host header values the dashboard answers. A web page
// of another site that resolves its own name to 127.0.0.1 (DNS rebinding)
// reaches the dashboard with that name as Host; answering only the names
// the operator uses keeps the viewer's credentials to the viewer.
type hostPolicy struct {
	// exact are "host:port" values, lower case.
	exact map[string]bool
	// anyPort are hosts allowed on any port, lower case.
	anyPort map[string]bool
}

// newHostPolicy allows the listen address, localhost on its port (and the
// loopback addresses when it listens on every interface) and the allowed
// values: "host:port" allows that pair, a bare host allows it on any port
// (behind a proxy the port is the proxy's).
func newHostPolicy(listen net.Addr, allowed []string) hostPolicy {
	p := hostPolicy{exact: map[string]bool{}, anyPort: map[string]bool{}}
	if tcp, ok := listen.(*net.TCPAddr); ok {
		port := strconv.Itoa(tcp.Port)
		hosts := []string{"localhost"}
		if tcp.IP == nil || tcp.IP.IsUnspecified() {
			hosts = append(hosts, "127.0.0.1", "::1")
		} else {
			hosts = append(hosts, tcp.IP.String())
		}
		for _, h := range hosts {
			p.exact[net.JoinHostPort(h, port)] = true
		}
	}
	for _, a := range allowed {
		if h, port, err := net.SplitHostPort(a); err == nil {
			p.exact[net.JoinHostPort(strings.ToLower(h), port)] = true
			continue
		}
		p.anyPort[strings.ToLower(strings.Trim(a, "[]"))] = true
	}
	return p
}

// allows reports whether a request's Host is one the dashboard answers.
// A Host without a port is on port 80, as a browser sends it.
func (p hostPolicy) allows(host string) bool {
	h, port, err := net.SplitHostPort(host)
	if err != nil {
		h, port = host, "80"
		if inner, ok := strings.CutPrefix(h, "["); ok {
			// Brackets enclose an IPv6 address and nothing else.
			if h = strings.TrimSuffix(inner, "]"); net.ParseIP(h) == nil || h == inner {
				return false
			}
		}
	}
	h = strings.ToLower(h)
	if h == "" || !validPort(port) {
		return false
	}
	return p.exact[net.JoinHostPort(h, port)] || p.anyPort[h]
}

func validPort(port string) bool {
	n, err := strconv.Atoi(port)
	return err == nil && n > 0 && n <= 65535 && strconv.Itoa(n) == port
}

// ValidateAllowedHost checks an --allowed-host value: a DNS name or an IP
// address, optionally with a port; no scheme, path or user.
func ValidateAllowedHost(value string) error {
	h, port, err := net.SplitHostPort(value)
	if err != nil {
		h, port = strings.Trim(value, "[]"), ""
	}
	if net.ParseIP(h) == nil && len(validation.IsDNS1123Subdomain(strings.ToLower(h))) > 0 || strings.Contains(port, "/") {
		return fmt.Errorf("%q: want a host name or IP address, optionally with :port (no scheme or path)", value)
	}
	if port != "" && !validPort(port) {
		return fmt.Errorf("%q: the port must be a number from 1 to 65535", value)
	}
	return nil
}

// crossSite reports whether a browser sent the request on behalf of
// another site's page: its Sec-Fetch-Site says so, or its Origin is not the
// dashboard's. Requests without either header (curl, scripts) are the
// viewer's own.
func crossSite(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
	default:
		return true
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return false
	}
	u, err := url.Parse(origin)
	return err != nil || (u.Scheme != "http" && u.Scheme != "https") || !strings.EqualFold(u.Host, r.Host)
}

// guarded sets the security headers on every response, refuses Hosts the
// policy does not allow, and refuses cross-site requests for data (the
// /api routes: JSON and event streams). Pages stay reachable by a link
// from elsewhere; what they show needs no cross-site read to be useful.
func guarded(p hostPolicy, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for k, v := range securityHeaders {
			w.Header().Set(k, v)
		}
		if !p.allows(r.Host) {
			http.Error(w, fmt.Sprintf("the dashboard does not answer host %q: open it by the address it listens on "+
				"or localhost, or start it with --allowed-host", r.Host), http.StatusForbidden)
			return
		}
		if strings.HasPrefix(r.URL.Path, "/api/") && crossSite(r) {
			http.Error(w, "the dashboard's data is not served to other sites", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// streamSlots bounds the number of open event streams.
type streamSlots chan struct{}

// take reserves a slot, false when every slot is taken.
func (s streamSlots) take() bool {
	select {
	case s <- struct{}{}:
		return true
	default:
		return false
	}
}

// give frees a slot taken.
func (s streamSlots) give() { <-s }
