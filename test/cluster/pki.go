package cluster

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Users of the client certificates the cluster generates.
const (
	adminUser     = "podtrace-admin"
	kcmUser       = "system:kube-controller-manager"
	schedulerUser = "system:kube-scheduler"
	// KwokUser is the user kwok acts as: pod and node status updates, events,
	// node leases and the final deletion of pods come from it.
	KwokUser = "kwok"

	frontProxyUser = "front-proxy-client"
	// kubeletClient is the API server's identity towards kubelets.
	kubeletClient = "kube-apiserver-kubelet-client"
)

// keyPair is a certificate and its private key, in memory and on disk.
type keyPair struct {
	cert     *x509.Certificate
	key      crypto.Signer
	certPEM  []byte
	keyPEM   []byte
	certFile string
	keyFile  string
}

// pki is the set of credentials a cluster needs.
type pki struct {
	serverCA *keyPair // signs the API server's serving certificate
	clientCA *keyPair // signs the client certificates (--client-ca-file)
	// frontProxyCA signs the certificate the API server presents to
	// aggregated API servers (--requestheader-client-ca-file); controllers
	// using delegated authentication read it from the configmap
	// kube-system/extension-apiserver-authentication.
	frontProxyCA     *keyPair
	frontProxyClient *keyPair
	apiserver        *keyPair // serving certificate: 127.0.0.1, localhost
	clients          map[string]*keyPair
	saKey            string // service account signing key (private)
	saPub            string // service account verification key (public)
}

// newPKI generates the credentials into dir.
func newPKI(dir string, serviceIP net.IP) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	p := &pki{clients: map[string]*keyPair{}}
	var err error
	if p.serverCA, err = newCA(dir, "ca", "podtrace-local-ca"); err != nil {
		return nil, err
	}
	if p.clientCA, err = newCA(dir, "client-ca", "podtrace-local-client-ca"); err != nil {
		return nil, err
	}
	if p.frontProxyCA, err = newCA(dir, "front-proxy-ca", "podtrace-local-front-proxy-ca"); err != nil {
		return nil, err
	}
	p.frontProxyClient, err = newCert(dir, "front-proxy-client", p.frontProxyCA, &x509.Certificate{
		Subject:     pkix.Name{CommonName: frontProxyUser},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		return nil, err
	}
	p.apiserver, err = newCert(dir, "apiserver", p.serverCA, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), serviceIP},
		DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local"},
	})
	if err != nil {
		return nil, err
	}
	for _, c := range []struct {
		file, user string
		groups     []string
	}{
		{"admin", adminUser, []string{"system:masters"}},
		{"kube-controller-manager", kcmUser, nil},
		{"kube-scheduler", schedulerUser, nil},
		{"kwok", KwokUser, nil},
		{kubeletClient, kubeletClient, nil},
	} {
		kp, err := newCert(dir, c.file, p.clientCA, &x509.Certificate{
			Subject:     pkix.Name{CommonName: c.user, Organization: c.groups},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		})
		if err != nil {
			return nil, err
		}
		p.clients[c.file] = kp
	}

	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate service account key: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(saKey)
	if err != nil {
		return nil, err
	}
	pubDER, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, err
	}
	p.saKey = filepath.Join(dir, "sa.key")
	p.saPub = filepath.Join(dir, "sa.pub")
	if err := os.WriteFile(p.saKey, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(p.saPub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}), 0o644); err != nil {
		return nil, err
	}
	return p, nil
}

func newCA(dir, file, name string) (*keyPair, error) {
	return newCert(dir, file, nil, &x509.Certificate{
		Subject:               pkix.Name{CommonName: name},
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	})
}

// newCert generates a key and a certificate from template, signed by ca (or
// self-signed when ca is nil), and writes them to dir/file.{crt,key}.
func newCert(dir, file string, ca *keyPair, template *x509.Certificate) (*keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate key for %s: %w", file, err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, err
	}
	template.SerialNumber = serial
	now := time.Now()
	template.NotBefore = now.Add(-time.Hour)
	template.NotAfter = now.Add(365 * 24 * time.Hour)
	if template.KeyUsage == 0 {
		template.KeyUsage = x509.KeyUsageDigitalSignature
	}
	parent, signer := template, crypto.Signer(key)
	if ca != nil {
		parent, signer = ca.cert, ca.key
	}
	der, err := x509.CreateCertificate(rand.Reader, template, parent, &key.PublicKey, signer)
	if err != nil {
		return nil, fmt.Errorf("sign certificate %s: %w", file, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	kp := &keyPair{
		cert:     cert,
		key:      key,
		certPEM:  pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:   pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
		certFile: filepath.Join(dir, file+".crt"),
		keyFile:  filepath.Join(dir, file+".key"),
	}
	if err := os.WriteFile(kp.certFile, kp.certPEM, 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(kp.keyFile, kp.keyPEM, 0o600); err != nil {
		return nil, err
	}
	return kp, nil
}

// kubeconfig renders a self-contained kubeconfig (certificates embedded) for
// the client credentials kp.
func kubeconfig(server string, ca []byte, kp *keyPair, user string) []byte {
	b64 := base64.StdEncoding.EncodeToString
	var b strings.Builder
	fmt.Fprintf(&b, `apiVersion: v1
kind: Config
clusters:
- name: podtrace-local
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: %s
  user:
    client-certificate-data: %s
    client-key-data: %s
contexts:
- name: podtrace-local
  context:
    cluster: podtrace-local
    user: %s
current-context: podtrace-local
`, server, b64(ca), user, b64(kp.certPEM), b64(kp.keyPEM), user)
	return []byte(b.String())
}
