package kargo

import (
	"regexp"
	"strings"
)

// ControlPlaneServiceAccounts are the ServiceAccounts Kargo's chart runs its
// components as. Each creates Promotions for other people, or for no one:
// the API server for every Kargo UI and CLI user (and whatever a project
// admin pastes into the UI's YAML editor), the controllers for
// auto-promotion.
var ControlPlaneServiceAccounts = []string{
	"kargo-api", "kargo-controller", "kargo-management-controller",
	"kargo-webhooks-server", "kargo-external-webhooks-server", "kargo-garbage-collector",
}

// ControlPlaneUsers matches the user names of ControlPlaneServiceAccounts
// in any namespace.
var ControlPlaneUsers = regexp.MustCompile(`^system:serviceaccount:[^:]+:(` +
	strings.Join(ControlPlaneServiceAccounts, "|") + `)$`)

// ControlPlaneUser is the user name of a Kargo component's ServiceAccount
// in Kargo's namespace.
func ControlPlaneUser(namespace, serviceAccount string) string {
	return "system:serviceaccount:" + namespace + ":" + serviceAccount
}
