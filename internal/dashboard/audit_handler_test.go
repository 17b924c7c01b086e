package dashboard

import (
	"encoding/csv"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/audit"
	"github.com/kargo-fleet/kargo-fleet/internal/dashboard/dashtest"
)

// auditFleet is the test fleet with a trail of n records, the head in its
// status.
func auditFleet(n int) []client.Object {
	fleet := dashtest.NewFleet(20, now)
	objs := fleet.Objects()
	records := make([]fleetv1alpha1.AuditRecord, n)
	for i := range records {
		records[i] = fleetv1alpha1.AuditRecord{Time: metav1.NewMicroTime(now.Add(time.Duration(i) * time.Second)),
			Action: "WavePassed", Type: "Normal", Actor: "kargo-fleet", Stage: "prod-canary", Message: "Wave canary passed"}
	}
	records[1].Actor, records[1].Action = "=cmd|' /C calc'!A0", "PromotionRefused"
	head := audit.Chain(audit.Head{}, records)
	for _, s := range audit.PlanAppend(dashtest.Namespace, "prod", nil, "", records).Create {
		objs = append(objs, s)
	}
	for _, o := range objs {
		if fs, ok := o.(*fleetv1alpha1.FleetStage); ok && fs.Name == "prod" {
			fs.Status.Audit = &fleetv1alpha1.AuditHead{Sequence: head.Sequence, Hash: head.Hash}
		}
	}
	return objs
}

func TestHandler_audit(t *testing.T) {
	objs := auditFleet(300)
	ts := serveReader(t, fake.NewClientBuilder().WithScheme(testScheme()).WithObjects(objs...).Build())

	resp, err := http.Get(ts.URL + "/api/projects/shop/fleetstages/prod/audit?format=csv")
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "whole", resp.Header.Get(AuditIntegrityHeader))
	require.Equal(t, `attachment; filename="shop-prod-audit.csv"`, resp.Header.Get("Content-Disposition"))
	rows, err := csv.NewReader(resp.Body).ReadAll()
	require.NoError(t, err)
	require.Len(t, rows, 301)
	require.Equal(t, "'=cmd|' /C calc'!A0", rows[2][6], "a formula is kept a string")

	code, body := get(t, ts.URL+"/api/projects/shop/fleetstages/prod/audit")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, 300, strings.Count(body, "\n"))
	require.Contains(t, body, `"fleetStage":"prod","sequence":1,`)

	code, _ = get(t, ts.URL+"/api/projects/shop/fleetstages/prod/audit?format=xml")
	require.Equal(t, http.StatusBadRequest, code)

	// A record changed behind the controller's back shows in the header.
	for _, o := range objs {
		if s, ok := o.(*fleetv1alpha1.FleetAuditSegment); ok && s.Spec.First == 257 {
			s.Spec.Records[0].Message = "nothing to see"
		}
	}
	ts = serveReader(t, fake.NewClientBuilder().WithScheme(testScheme()).WithObjects(objs...).Build())
	resp2, err := http.Head(ts.URL + "/api/projects/shop/fleetstages/prod/audit")
	require.NoError(t, err)
	_ = resp2.Body.Close()
	require.Equal(t, "not whole: record 257 (WavePassed) was changed: it does not hash to its hash from the record before",
		resp2.Header.Get(AuditIntegrityHeader))

	// The fleet page links both downloads.
	code, body = get(t, ts.URL+fleetPage)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `href="/api/projects/shop/fleetstages/prod/audit?format=csv" download>CSV</a>`)
}
