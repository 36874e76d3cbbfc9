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
}

// Moments are the points Kubeconfig names: the end of the recording, and
// each session's start and end.
func (s *Server) Moments() []Moment {
	out := []Moment{{Name: "podtrace-latest"}}
	for _, ss := range s.sessions {
		out = append(out,
			Moment{Name: fmt.Sprintf("podtrace-session-%d-start", ss.ID), At: ss.Started},
			Moment{Name: fmt.Sprintf("podtrace-session-%d-end", ss.ID), At: ss.End()})
	}
	return out
}

// Kubeconfig returns a kubeconfig whose contexts are the moments, served at
// base (e.g. http://127.0.0.1:8001); the first is current.
func Kubeconfig(base string, moments []Moment) *clientcmdapi.Config {
	cfg := clientcmdapi.NewConfig()
	for i, m := range moments {
		server := base + "/latest/"
		if !m.At.IsZero() {
			server = base + Path(m.At)
		}
		c := clientcmdapi.NewCluster()
		c.Server = server
		cfg.Clusters[m.Name] = c
		cfg.AuthInfos[m.Name] = clientcmdapi.NewAuthInfo()
		ctx := clientcmdapi.NewContext()
		ctx.Cluster, ctx.AuthInfo = m.Name, m.Name
		cfg.Contexts[m.Name] = ctx
		if i == 0 {
			cfg.CurrentContext = m.Name
		}
	}
	return cfg
}
