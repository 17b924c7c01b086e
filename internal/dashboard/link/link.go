// Package link builds the URLs of kargo-fleet's dashboard and of Kargo's UI
// pages that the dashboard, `kargo-fleet status` and step outputs point to.
// It is pure and imports nothing beyond the standard library, so any caller
// can build a link without pulling in the dashboard server.
package link

import (
	"net/url"
	"strings"
)

// DashboardURLEnv is the environment variable naming the dashboard's base
// URL, read by `kargo-fleet status` when --dashboard-url is not given.
const DashboardURLEnv = "KARGO_FLEET_DASHBOARD_URL"

// Base returns raw without trailing slashes, and false when raw is not an
// absolute http(s) URL.
func Base(raw string) (string, bool) {
	u, err := url.Parse(raw)
	if raw == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", false
	}
	return strings.TrimRight(raw, "/"), true
}

// ProjectPath is the dashboard path of a Kargo Project's FleetStages:
// "/projects/<ns>".
func ProjectPath(namespace string) string {
	return "/projects/" + url.PathEscape(namespace)
}

// FleetStagePath is the dashboard path of one FleetStage:
// "/projects/<ns>/fleetstages/<name>".
func FleetStagePath(namespace, name string) string {
	return ProjectPath(namespace) + "/fleetstages/" + url.PathEscape(name)
}

// WaveAnalysisPath is the dashboard path of a wave's analysis:
// "/projects/<ns>/fleetstages/<name>/waves/<wave>/analysis".
func WaveAnalysisPath(namespace, name, wave string) string {
	return FleetStagePath(namespace, name) + "/waves/" + url.PathEscape(wave) + "/analysis"
}

// FleetStageURL is the dashboard URL of one FleetStage (and of its current
// rollout): "<base>/projects/<ns>/fleetstages/<name>". It returns "" when
// base is not an http(s) URL.
func FleetStageURL(base, namespace, name string) string {
	b, ok := Base(base)
	if !ok {
		return ""
	}
	return b + FleetStagePath(namespace, name)
}

// KargoStageURL is the Kargo UI URL of a Stage:
// "<kargo>/project/<ns>/stage/<stage>". It returns "" when kargoBase is not
// an http(s) URL.
func KargoStageURL(kargoBase, namespace, stage string) string {
	b, ok := Base(kargoBase)
	if !ok {
		return ""
	}
	return b + "/project/" + url.PathEscape(namespace) + "/stage/" + url.PathEscape(stage)
}
