// The live map page (served by websearchd at <map>/map.js): reads <map>/mapstate for the layers, then each active
// layer's <map>/api/capa/<slug> on that layer's own schedule, and draws them with Leaflet. A layer that fails keeps
// its last drawing and says why in the legend; the others go on. No inline script or style attributes: the page's
// Content-Security-Policy forbids them (styles are set through the DOM, which it allows).
'use strict';
(function () {
  var COLOURS = {
    vuelos: '#1565c0', buques: '#00897b', terremotos: '#e65100', satelites: '#6a1b9a',
    conflictos: '#c62828', 'fondo-marino': '#283593', 'conflictos-ucdp': '#ad1457'
  };
  // The fastest a layer is asked again, and the slowest (seconds); satellites move between two of their polls
  // (positions are propagated when asked), so they are redrawn every minute.
  var REFRESH_MIN_S = 15, REFRESH_MAX_S = 3600, SATELLITES_REDRAW_S = 60, STATE_REFRESH_S = 60;
  // The longest a read of ours may take: a hung one would stop its layer's (or the legend's) refreshes.
  var FETCH_TIMEOUT_S = 30;
  var body = document.body;
  // Without the map library (an offline machine, a blocked CDN, a changed copy refused by its integrity hash) the
  // legend still lists every layer with its status, counts and errors, and the map's place says why it is empty.
  var L = window.L, map = null;
  if (L) {
    map = L.map('map', { worldCopyJump: true, minZoom: 1, zoomSnap: 0.25, maxBoundsViscosity: 1 })
      .fitBounds([[-55, -170], [72, 180]]);
    // No empty band beyond the poles (longitudes wrap); set once the view is, so that it moves the view inside.
    map.setMaxBounds([[-85, -540], [85, 540]]);
    // Leaflet follows the window's size, not its container's: the legend filling in resizes the map on a phone.
    if (window.ResizeObserver) new ResizeObserver(function () { map.invalidateSize(); }).observe(map.getContainer());
    if (body.dataset.tiles) {
      L.tileLayer(body.dataset.tiles, { maxZoom: 12, attribution: body.dataset.attribution || '' }).addTo(map);
    }
  } else {
    var missing = document.getElementById('map');
    missing.className = 'unavailable';
    missing.textContent = 'The map library (Leaflet) could not be loaded, so nothing is drawn; the legend still shows ' +
      'each layer. The operator can serve a copy and name it in WEBSEARCHD_MAP_ASSETS_URL.';
  }
  var legend = document.getElementById('legend');
  var props = document.getElementById('props');
  var notice = document.getElementById('notice');
  var layers = {};

  document.getElementById('toggle').addEventListener('click', function () {
    body.classList.toggle('collapsed');
  });

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function row(entry) {
    var slug = entry.slug;
    var div = el('div', 'layer');
    div.id = 'layer-' + slug;
    var box = el('input');
    box.type = 'checkbox';
    box.id = 'toggle-' + slug;
    box.checked = true;
    var label = el('label');
    label.htmlFor = box.id;
    var swatch = el('span', 'swatch');
    swatch.style.background = COLOURS[slug] || '#555';
    var status = el('span', 'status');
    label.append(swatch, entry.name + ' ', status);
    var meta = el('div', 'meta'), why = el('div', 'why');
    div.append(box, label, meta, why);
    legend.append(div);
    var layer = {
      slug: slug, entry: entry, group: map && L.layerGroup().addTo(map), box: box, status: status, meta: meta, why: why,
      fetchedAt: Date.now(), error: null, polling: false
    };
    box.addEventListener('change', function () {
      if (!map) return;
      if (box.checked) map.addLayer(layer.group); else map.removeLayer(layer.group);
    });
    return layer;
  }

  function age(layer) {
    var e = layer.entry;
    if (e.age_s === null || e.age_s === undefined) return 'no data yet';
    var s = e.age_s + Math.round((Date.now() - layer.fetchedAt) / 1000);
    return 'updated ' + (s < 120 ? s + ' s' : s < 7200 ? Math.round(s / 60) + ' min' : Math.round(s / 3600) + ' h') +
      ' ago';
  }

  function render(layer) {
    var e = layer.entry;
    var status = layer.error ? 'error' : e.status;
    layer.status.textContent = status;
    layer.status.className = 'status ' + status;
    layer.box.disabled = !e.active;
    // The source that gave the data held: the fallback's when it answered.
    var src = e.fallback && e.served_by === e.fallback.id ? e.fallback : e.source || {};
    layer.meta.textContent = (e.active ? e.count + ' objects, ' + age(layer) + '. ' : '') + 'Source: ' +
      (src.attribution || src.id || '?') + ' (licence: ' + (src.licence || '?') + ')';
    var reason = layer.error ? 'this page could not read the layer: ' + layer.error :
      e.status === 'disabled' ? e.reason : e.last_error ? 'last error: ' + e.last_error : '';
    layer.why.textContent = reason || '';
  }

  function arrow(ll, deg, cls) {
    var span = el('span', '', deg === null || deg === undefined ? '\u25c6' : '\u25b2');
    if (deg !== null && deg !== undefined) span.style.transform = 'rotate(' + deg + 'deg)';
    return L.marker(ll, { icon: L.divIcon({ html: span, className: cls + ' ws-arrow', iconSize: [14, 14] }) });
  }

  // Splits a ground track where it crosses the antimeridian, so that no line is drawn across the whole map.
  function track(points) {
    var segments = [[]], prev = null;
    points.forEach(function (p) {
      if (prev !== null && Math.abs(p[0] - prev) > 180) segments.push([]);
      segments[segments.length - 1].push([p[1], p[0]]);
      prev = p[0];
    });
    return segments;
  }

  function draw(layer, features) {
    if (!map) return;
    var slug = layer.slug, kind = layer.entry.kind, colour = COLOURS[slug] || '#555';
    var cls = 'ws-obj ws-' + slug;
    var dot = function (ll, radius) {
      return L.circleMarker(ll, { radius: radius, color: colour, weight: 1, fillOpacity: 0.45, className: cls });
    };
    layer.group.clearLayers();
    features.forEach(function (f) {
      var c = f.geometry && f.geometry.coordinates;
      if (!Array.isArray(c) || c.length < 2) return;
      var ll = [c[1], c[0]], p = f.properties || {}, marker;
      if (kind === 'flights') marker = arrow(ll, p.track_deg, cls);
      else if (kind === 'ships') marker = arrow(ll, p.heading_deg !== null ? p.heading_deg : p.course_deg, cls);
      else if (kind === 'earthquakes') marker = dot(ll, 3 + 2.5 * Math.max(0, Number(p.magnitude) || 0));
      else marker = dot(ll, kind === 'satellites' ? 5 : 4);
      if (kind === 'satellites' && Array.isArray(p.ground_track)) {
        layer.group.addLayer(L.polyline(track(p.ground_track), {
          color: colour, weight: 1, opacity: 0.6, dashArray: '4 4', interactive: false, className: 'ws-track'
        }));
      }
      marker.on('click', function () { show(layer, p); });
      layer.group.addLayer(marker);
    });
  }

  function show(layer, p) {
    var close = el('button', 'close', '\u00d7');
    close.type = 'button';
    close.title = 'close';
    close.addEventListener('click', function () { props.hidden = true; });
    props.replaceChildren(close, el('strong', '', layer.entry.name));
    var table = el('table');
    Object.keys(p).forEach(function (k) {
      var v = p[k], tr = el('tr'), td = el('td');
      if (k === 'ground_track' && Array.isArray(v)) v = v.length + ' points';
      else if (/_ms$/.test(k) && typeof v === 'number') v = new Date(v).toISOString();
      if (k === 'url' && typeof v === 'string' && /^https?:\/\//.test(v)) {
        var a = el('a', '', v);
        a.href = v;
        a.rel = 'noopener noreferrer';
        td.append(a);
      } else {
        td.textContent = v === null || v === undefined ? '\u2014' : typeof v === 'object' ? JSON.stringify(v) : String(v);
      }
      tr.append(el('td', '', k), td);
      table.append(tr);
    });
    props.append(table);
    props.hidden = false;
    body.classList.remove('collapsed');
    props.scrollIntoView({ block: 'nearest' });
  }

  function getJSON(url) {
    return fetch(url, { cache: 'no-store', signal: AbortSignal.timeout(FETCH_TIMEOUT_S * 1000) }).then(function (r) {
      if (!r.ok) throw new Error('HTTP ' + r.status);
      return r.json();
    });
  }

  // One read at a time per layer: the next is scheduled when this one has ended, however it ended.
  function refresh(layer) {
    getJSON('api/capa/' + encodeURIComponent(layer.slug)).then(function (data) {
      layer.entry = data.layer;
      layer.fetchedAt = Date.now();
      layer.error = null;
      draw(layer, data.features || []);
    }).catch(function (e) {
      layer.error = String(e && e.message || e);
    }).then(function () {
      var every = layer.entry.kind === 'satellites' ? SATELLITES_REDRAW_S : layer.entry.refresh_s;
      every = Math.min(REFRESH_MAX_S, Math.max(REFRESH_MIN_S, Number(every) || REFRESH_MAX_S));
      setTimeout(function () { refresh(layer); }, every * 1000);
      render(layer);
    });
  }

  function loadState() {
    getJSON('mapstate').then(function (state) {
      (state && state.layers || []).forEach(function (entry) {
        var layer = layers[entry.slug];
        if (!layer) layer = layers[entry.slug] = row(entry);
        layer.entry = entry;
        layer.fetchedAt = Date.now();
        render(layer);
        if (entry.active && !layer.polling) {
          layer.polling = true;
          refresh(layer);
        }
      });
      notice.textContent = '';
    }).catch(function (e) {
      notice.textContent = 'The map state could not be read (' + String(e && e.message || e) + '); trying again.';
    }).then(function () {
      setTimeout(loadState, STATE_REFRESH_S * 1000);
    });
  }

  setInterval(function () {
    Object.keys(layers).forEach(function (slug) { render(layers[slug]); });
  }, 5000);
  loadState();
})();
