package config

import (
	"errors"
	"net/url"
	"strings"
)

// checkBaseURL checks a base URL that short links are built on (an empty
// one is not set): http or https, a host, and nothing a link appended to
// it would break (user info, a query, a fragment). withPath allows a path
// (a proxy that routes a prefix to Parley); without it the URL must name
// the root, as a short domain does.
func checkBaseURL(raw string, withPath bool) error {
	if raw == "" {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("not a URL")
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return errors.New("want http:// or https:// and a host")
	case u.Host == "" || u.Hostname() == "":
		return errors.New("no host")
	case u.User != nil:
		return errors.New("no user name or password: every short link would carry them")
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(raw, "#"):
		return errors.New("no query or fragment: short links are appended to it")
	case !withPath && strings.TrimSuffix(u.Path, "/") != "":
		return errors.New("no path: codes are served at the root of this host")
	}
	return nil
}
