//go:build integration

package privilege_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestConfigMapDeletesAreStageRecordsOnly: the controller deletes the
// Stage records newer ones replaced, so its ClusterRole may delete
// ConfigMaps; the admission policy keeps that right to Stage records in
// fleet Projects.
func TestConfigMapDeletesAreStageRecordsOnly(t *testing.T) {
	setUp(t)
	ctx := context.Background()
	const (
		cmPlace = "kargo-fleet creates ConfigMaps only in a Kargo Project namespace holding a FleetStage"
		cmShape = "it deletes only Stage records"
	)
	// Made by an administrator: what the controller may not delete, and a
	// Stage record it may.
	system := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: "cluster-config"}}
	project := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: fleetProject, Name: "app-config"}}
	snapshot, err := planSnapshot(fleetProject, func(cm *corev1.ConfigMap) { cm.Name = "fleet-2-plan" })
	require.NoError(t, err)
	record, err := stageRecord(fleetProject, func(cm *corev1.ConfigMap) { cm.Name = "fleet-stages-0123456789abcdef" })
	require.NoError(t, err)
	elsewhere, err := stageRecord(noProject)
	require.NoError(t, err)
	for _, cm := range []*corev1.ConfigMap{system, project, snapshot, record, elsewhere} {
		require.NoError(t, env.Client.Create(ctx, cm), cm.Name)
	}

	for _, c := range []struct {
		name    string
		cm      *corev1.ConfigMap
		message string
	}{
		{"a ConfigMap in kube-system", system, cmPlace},
		{"a Project's own ConfigMap", project, cmShape},
		{"a FleetRollout's plan snapshot", snapshot, cmShape},
		{"a Stage record outside a fleet Project", elsewhere, cmPlace},
	} {
		t.Run(c.name, func(t *testing.T) {
			requireRefusal(t, controller.Delete(ctx, c.cm, client.DryRunAll), byConfigMaps, c.message)
		})
	}
	t.Run("a Stage record in a fleet Project", func(t *testing.T) {
		require.NoError(t, controller.Delete(ctx, record))
	})
}
