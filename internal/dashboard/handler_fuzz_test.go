package dashboard

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/kargo-fleet/kargo-fleet/internal/dashboard/dashtest"
)

// FuzzHandler: whatever the path, query, Host, Origin and Sec-Fetch-Site of
// a GET, the dashboard (serving -n shop next to another Project, with one
// --allowed-host) answers without a server error and with its security
// headers; it answers only allowed Hosts, never serves its data to another
// site, and never serves a Project outside -n.
func FuzzHandler(f *testing.F) {
	objs := dashtest.NewFleet(20, now).Objects()
	objs = append(objs, dashtest.NewFleetIn("other", 20, now).Objects()...)
	c := fake.NewClientBuilder().WithScheme(testScheme()).WithObjects(objs...).Build()
	s, err := New(context.Background(), Options{Reader: c, Scheme: testScheme(), Namespaces: []string{dashtest.Namespace},
		AllowedHosts: []string{"fleet.example.com"}, Clock: clocktesting.NewFakeClock(now), Log: logr.Discard()})
	require.NoError(f, err)
	listen := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 3100}
	h := s.Handler(listen)
	const local = "127.0.0.1:3100"

	f.Add("/projects", "", local, "", "")
	f.Add(fleetPage, "groupBy=region", "localhost:3100", "", "same-origin")
	f.Add("/api"+fleetPage+"/grid", "groupBy=%ZZ&groupBy=wave", local, "http://127.0.0.1:3100", "")
	f.Add("/api"+fleetPage+"/targets/eu-west-1-01", "", "fleet.example.com", "https://fleet.example.com", "same-origin")
	f.Add("/api"+fleetPage+"/targets/..%2F..%2Fx", "", local, "", "none")
	f.Add("/api"+fleetPage+"/events", "groupBy=wave", local, "https://attacker.example", "cross-site")
	f.Add("/api/projects/other/fleetstages/prod/grid", "", local, "", "")
	f.Add("/projects/oth%65r/fleetstages/prod", "", local, "", "")
	f.Add("/projects/shop%2Fx/fleetstages/prod", "", local, "", "")
	f.Add("/static/../projects/other", "", "attacker.example:3100", "", "")
	f.Add("/projects", "", "LocalHost:3100", "null", "same-site")
	f.Fuzz(func(t *testing.T, path, query, host, origin, fetchSite string) {
		u, err := url.Parse("http://" + local + path)
		if err != nil || u.Path == "" || u.Host != local {
			return
		}
		u.RawQuery = query
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // event streams end after their first push
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err != nil {
			return
		}
		req.Host = host
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		if fetchSite != "" {
			req.Header.Set("Sec-Fetch-Site", fetchSite)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		code := rec.Code

		require.Less(t, code, 500, "no server error for %s %q Host %q: %s", path, query, host, rec.Body.String())
		for k, v := range securityHeaders {
			require.Equal(t, v, rec.Header().Get(k), k)
		}
		if !wantAllowed(host) {
			require.Equal(t, http.StatusForbidden, code, "Host %q is refused", host)
			return
		}
		if strings.HasPrefix(req.URL.Path, "/api/") && (origin != "" || fetchSite != "") && crossSiteHeaders(origin, fetchSite, host) {
			require.Equal(t, http.StatusForbidden, code, "cross-site data request")
			return
		}
		if code == http.StatusOK {
			if ns, ok := projectOf(req.URL); ok {
				require.Equal(t, dashtest.Namespace, ns, "only the -n Project is served")
			}
		}
	})
}

// wantAllowed reports whether FuzzHandler's dashboard may answer a Host:
// fleet.example.com on any port, 127.0.0.1 and localhost on 3100.
func wantAllowed(host string) bool {
	hostname, port, err := net.SplitHostPort(host)
	if err != nil {
		hostname, port = host, "80"
	}
	switch strings.ToLower(hostname) {
	case "fleet.example.com":
		return true
	case "127.0.0.1", "localhost":
		return port == "3100"
	}
	return false
}

// crossSiteHeaders reports whether the headers name another site than host.
func crossSiteHeaders(origin, fetchSite, host string) bool {
	if fetchSite != "" && fetchSite != "same-origin" && fetchSite != "none" {
		return true
	}
	if origin == "" {
		return false
	}
	u, err := url.Parse(origin)
	return err != nil || !strings.EqualFold(u.Host, host) || (u.Scheme != "http" && u.Scheme != "https")
}

// projectOf returns the Project a dashboard path names, segment unescaped
// as the router does.
func projectOf(u *url.URL) (string, bool) {
	segs := strings.Split(strings.TrimPrefix(u.EscapedPath(), "/"), "/")
	if len(segs) > 0 && segs[0] == "api" {
		segs = segs[1:]
	}
	if len(segs) < 2 || segs[0] != "projects" {
		return "", false
	}
	ns, err := url.PathUnescape(segs[1])
	return ns, err == nil
}
