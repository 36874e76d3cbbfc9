// Package deploy proves the manifests in deploy/ on the local control plane.
package deploy
