import { useEffect, useState } from 'preact/hooks';

/**
 * Pages live in the URL's fragment (`#/computers/cmp_1`): the server serves one document at `/`
 * and every API path stays the API's. Query parameters after `?` in the fragment carry filters.
 */
export interface Route {
  path: string[];
  query: URLSearchParams;
}

function current(): Route {
  const raw = location.hash.replace(/^#/, '') || '/computers';
  const [pathPart = '', queryPart = ''] = raw.split('?');
  return { path: pathPart.split('/').filter(Boolean).map(decodeURIComponent), query: new URLSearchParams(queryPart) };
}

export function useRoute(): Route {
  const [route, setRoute] = useState(current);
  useEffect(() => {
    const onChange = () => setRoute(current());
    addEventListener('hashchange', onChange);
    return () => removeEventListener('hashchange', onChange);
  }, []);
  return route;
}

export function href(...parts: string[]): string {
  return '#/' + parts.map(encodeURIComponent).join('/');
}

export function navigate(to: string) {
  location.hash = to.replace(/^#/, '');
}
