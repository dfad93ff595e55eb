import { useEffect, useRef, useState } from 'preact/hooks';
import type uPlotType from 'uplot';
import { html } from '../html.ts';

export interface Series {
  label: string;
  values: (number | null)[];
}

const PALETTE = ['#3867d6', '#eb3b5a', '#20bf6b', '#fa8231', '#8854d0', '#0fb9b1', '#f7b731', '#4b6584'];

let stylesheet: Promise<void> | undefined;
function loadStylesheet(): Promise<void> {
  return (stylesheet ??= new Promise((resolve) => {
    const link = document.createElement('link');
    link.rel = 'stylesheet';
    link.href = '/vendor/uplot.css';
    link.onload = link.onerror = () => resolve();
    document.head.append(link);
  }));
}

/**
 * A time-series chart (uPlot, loaded with the first chart a page shows), with its numbers in a
 * table under it for screen readers and for copying.
 */
/**
 * `range`: the x axis's span in Unix seconds (default: the data's own), so a single sample is not
 * stretched over years. `max`: the y axis's top (e.g. the memory there is), from zero.
 */
export function Chart({
  title,
  x,
  series,
  unit = '',
  range,
  max,
}: {
  title: string;
  x: number[];
  series: Series[];
  unit?: string;
  range?: [number, number];
  max?: number;
}) {
  const box = useRef<HTMLDivElement>(null);
  const [error, setError] = useState<string>();
  useEffect(() => {
    let plot: uPlotType | undefined;
    let cancelled = false;
    // A resize may be delivered after the chart left the page (its computer deleted): nothing to size then.
    const observer = new ResizeObserver(() => {
      if (plot && box.current) plot.setSize({ width: box.current.clientWidth, height: 220 });
    });
    void Promise.all([import('uplot'), loadStylesheet()])
      .then(([{ default: uPlot }]) => {
        if (cancelled || !box.current) return;
        const dark = document.documentElement.dataset.theme === 'dark';
        const axis = { stroke: dark ? '#c8ccd4' : '#333', grid: { stroke: dark ? '#333a45' : '#e5e7eb' }, ticks: { stroke: dark ? '#333a45' : '#e5e7eb' } };
        plot = new uPlot(
          {
            width: box.current.clientWidth || 600,
            height: 220,
            series: [{}, ...series.map((s, i) => ({ label: s.label, stroke: PALETTE[i % PALETTE.length], width: 2, points: { show: x.length < 40 } }))],
            axes: [axis, { ...axis, size: 80, values: (_u: uPlotType, ticks: number[]) => ticks.map((t) => `${t.toLocaleString()}${unit}`) }],
            scales: {
              x: range ? { time: true, range: () => range } : { time: true },
              ...(max === undefined ? {} : { y: { range: (): [number, number] => [0, max] } }),
            },
            legend: { live: false },
          },
          [x, ...series.map((s) => s.values)] as uPlotType.AlignedData,
          box.current,
        );
        observer.observe(box.current);
      })
      .catch((e: Error) => setError(e.message));
    return () => {
      cancelled = true;
      observer.disconnect();
      plot?.destroy();
    };
  }, [JSON.stringify([x, series, unit, range, max])]);
  return html`<figure class="chart">
    <figcaption>${title}</figcaption>
    <div ref=${box} class="chart-box" role="img" aria-label=${`${title}: chart of ${series.map((s) => s.label).join(', ')}`}></div>
    ${error ? html`<p class="error">The chart could not be drawn: ${error}</p>` : null}
    <details>
      <summary>Data of “${title}”</summary>
      <div class="table-wrap" tabindex="0" role="region" aria-label=${`Data of “${title}”`}>
        <table>
          <thead>
            <tr>
              <th scope="col">Time</th>
              ${series.map((s) => html`<th scope="col">${s.label}</th>`)}
            </tr>
          </thead>
          <tbody>
            ${x.map(
              (t, i) => html`<tr>
                <th scope="row">${new Date(t * 1000).toISOString().replace('T', ' ').slice(0, 16)}</th>
                ${series.map((s) => html`<td>${s.values[i] ?? '—'}</td>`)}
              </tr>`,
            )}
          </tbody>
        </table>
      </div>
    </details>
  </figure>`;
}
