package auditlog

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func line(stage, verb, user, resource, sub, ns, at string) string {
	return `{"kind":"Event","apiVersion":"audit.k8s.io/v1","stage":"` + stage + `","verb":"` + verb +
		`","user":{"username":"` + user + `"},"objectRef":{"resource":"` + resource + `","subresource":"` + sub +
		`","namespace":"` + ns + `"},"requestReceivedTimestamp":"` + at + `"}`
}

const fleet = "system:serviceaccount:kargo-fleet:kargo-fleet"

func TestCountWrites(t *testing.T) {
	log := strings.Join([]string{
		line("ResponseComplete", "create", fleet, "promotions", "", "p1", "2026-11-26T10:00:01Z"),
		line("ResponseComplete", "create", fleet, "promotions", "", "p1", "2026-11-26T10:00:02Z"),
		line("ResponseStarted", "create", fleet, "promotions", "", "p1", "2026-11-26T10:00:02Z"),
		line("ResponseComplete", "patch", fleet, "fleetrollouts", "status", "p1", "2026-11-26T10:00:03Z"),
		line("ResponseComplete", "list", fleet, "promotions", "", "p1", "2026-11-26T10:00:03Z"),
		line("ResponseComplete", "create", "system:serviceaccount:kargo:kargo-controller", "promotions", "", "p1", "2026-11-26T10:00:03Z"),
		line("ResponseComplete", "update", fleet, "leases", "", "kargo-fleet", "2026-11-26T10:00:04Z"),
		line("ResponseComplete", "create", fleet, "promotions", "", "p1", "2026-11-26T09:59:59Z"),
		line("ResponseComplete", "create", fleet, "promotions", "", "p1", "2026-11-26T10:01:00Z"),
		"",
	}, "\n")
	from := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	got, err := CountWrites(strings.NewReader(log), Filter{User: fleet, Namespace: "p1", From: from, To: from.Add(time.Minute)})
	require.NoError(t, err)
	require.Equal(t, Counts{"create promotions": 2, "patch fleetrollouts/status": 1}, got)
	require.Equal(t, 3, got.Total())
	require.Equal(t, "create promotions=2, patch fleetrollouts/status=1", got.String())

	all, err := CountWrites(strings.NewReader(log), Filter{User: fleet})
	require.NoError(t, err)
	require.Equal(t, Counts{"create promotions": 4, "patch fleetrollouts/status": 1, "update leases": 1}, all)
}

func TestCountWritesNamesABadLine(t *testing.T) {
	_, err := CountWrites(strings.NewReader(line("ResponseComplete", "create", fleet, "promotions", "", "p1",
		"2026-11-26T10:00:01Z")+"\nnot json\n"), Filter{})
	require.ErrorContains(t, err, "line 2")
}
