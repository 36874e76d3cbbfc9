package serve

import (
	"fmt"
	"time"

	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Moment is a named point in the recording, a context of the kubeconfig.
type Moment struct {
	Name string
	At   time.Time // zero: the end of the recording (/latest/)
	// Why says what happened then, for the reader of serve's output.
	Why string
}

// Moments are the points Kubeconfig names: the end of the recording, and
// each session's start and end.
func (s *Server) Moments() []Moment {
	out := []Moment{{Name: "podtrace-latest", Why: "the end of the recording"}}
	for _, ss := range s.sessions {
		out = append(out,
			Moment{Name: fmt.Sprintf("podtrace-session-%d-start", ss.ID), At: ss.Started, Why: fmt.Sprintf("session %d started", ss.ID)},
			Moment{Name: fmt.Sprintf("podtrace-session-%d-end", ss.ID), At: ss.End(), Why: fmt.Sprintf("session %d ended", ss.ID)})
	}
	return out
}

// Kubeconfig returns a kubeconfig whose contexts are the moments, served at
// base (e.g. http://127.0.0.1:8001); the first is current. With
// credentials (a server reachable beyond loopback, over TLS), each cluster
// trusts their certificate, and the one user, podtrace, carries their token.
func Kubeconfig(base string, moments []Moment, cred *Credentials) *clientcmdapi.Config {
	cfg := clientcmdapi.NewConfig()
	user := clientcmdapi.NewAuthInfo()
	if cred != nil {
		user.Token = cred.Token
	}
	cfg.AuthInfos["podtrace"] = user
	for i, m := range moments {
		server := base + "/latest/"
		if !m.At.IsZero() {
			server = base + Path(m.At)
		}
		c := clientcmdapi.NewCluster()
		c.Server = server
		if cred != nil {
			c.CertificateAuthorityData = cred.CAData
		}
		cfg.Clusters[m.Name] = c
		ctx := clientcmdapi.NewContext()
		ctx.Cluster, ctx.AuthInfo = m.Name, "podtrace"
		cfg.Contexts[m.Name] = ctx
		if i == 0 {
			cfg.CurrentContext = m.Name
		}
	}
	return cfg
}
