#!/usr/bin/python3
"""Test RTSP server (GStreamer RTSP server from Debian): serves a looping H.264 stream built from a
directory of same-sized JPEG frames (frame00000.jpg, ...) at a given frame rate.

Usage: server.py --frames DIR --fps N [--port P] [--mount /stream] [--bitrate KBPS] [--mark-frame K] [--tls PEM]
                 [--auth USER:PASS] [--audio-mount /audio] [--preencoded] [--mount-offsets S,S,...]
Prints "READY <port>" on stdout once it accepts connections. Run with /usr/bin/python3 (python3-gi).
With --mark-frame K it prints "MARK <unix ms>" whenever frame K of the loop enters the payloader
(bench/monitor.ts measures frame-to-event delay from it). With --tls PEM (certificate and key) it serves
rtsps:// only, to anyone (the anonymous role may open every mount).
With --preencoded the frames are encoded once at start (the same x264 settings, SPS/PPS before every key
frame, one access unit per file) and every mount replays those files without encoding, as a camera's own
encoder spares the box: mount i starts the i-th of --mount-offsets seconds into the loop (rounded to a key
frame), so the mounts can show the same scene at different times instead of in lock step.
"""
import argparse
import os
import sys
import time

import gi

gi.require_version('Gst', '1.0')
gi.require_version('GstRtspServer', '1.0')
from gi.repository import Gio, GLib, Gst, GstRtspServer  # noqa: E402


def mark_frames(media, frame: int, total: int) -> None:
    pad = media.get_element().get_by_name('pay0').get_static_pad('sink')
    count = [0]

    def probe(_pad, _info):
        if count[0] % total == frame:
            print(f'MARK {int(time.time() * 1000)}', flush=True)
        count[0] += 1
        return Gst.PadProbeReturn.OK

    pad.add_probe(Gst.PadProbeType.BUFFER, probe)


def frame_count(frames: str) -> int:
    return len([f for f in os.listdir(frames) if f.startswith('frame')])


def jpeg_to_h264(a, keyint: int) -> str:
    """The encoder chain every mode uses: the JPEG frames decoded and encoded with x264 (baseline)."""
    return (f'! jpegdec ! videoconvert ! video/x-raw,format=I420 '
            f'! x264enc tune=zerolatency speed-preset=ultrafast bitrate={a.bitrate} key-int-max={keyint} '
            f'! video/x-h264,profile=baseline ')


def encode_once(a, keyint: int, total: int) -> str:
    """Encodes the frames once into DIR/au/au%05d.h264 (one access unit per file); returns that dir."""
    out = os.path.join(a.frames, 'au')
    os.makedirs(out, exist_ok=True)
    pipeline = Gst.parse_launch(
        f'multifilesrc location="{a.frames}/frame%05d.jpg" index=0 stop-index={total - 1} caps="image/jpeg,framerate={a.fps}/1" '
        + jpeg_to_h264(a, keyint) +
        f'! h264parse config-interval=-1 ! video/x-h264,stream-format=byte-stream,alignment=au ! multifilesink location="{out}/au%05d.h264"')
    pipeline.set_state(Gst.State.PLAYING)
    msg = pipeline.get_bus().timed_pop_filtered(Gst.CLOCK_TIME_NONE, Gst.MessageType.EOS | Gst.MessageType.ERROR)
    pipeline.set_state(Gst.State.NULL)
    if msg.type == Gst.MessageType.ERROR:
        raise RuntimeError(f'encoding the frames failed: {msg.parse_error()[0].message}')
    if len(os.listdir(out)) != total:
        raise RuntimeError(f'encoding gave {len(os.listdir(out))} access units for {total} frames')
    return out


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument('--frames', required=True)
    p.add_argument('--fps', type=int, default=10)
    p.add_argument('--port', type=int, default=0)
    p.add_argument('--mount', action='append', default=None, help='mount point(s); default /stream')
    p.add_argument('--bitrate', type=int, default=1500, help='x264 kbit/s')
    p.add_argument('--keyint', type=int, default=0, help='key frame interval in frames (default: fps)')
    p.add_argument('--mark-frame', type=int, default=-1)
    p.add_argument('--tls', default=None, help='PEM file with the certificate and its key: serve rtsps://')
    p.add_argument('--auth', default=None, help='user:password required (Basic) on every mount')
    p.add_argument('--audio-mount', default=None, help='a mount serving audio only (no video track)')
    p.add_argument('--preencoded', action='store_true', help='encode once, replay the encoded frames on every mount')
    p.add_argument('--mount-offsets', default='', help='with --preencoded: each mount\'s start point in the loop, seconds')
    a = p.parse_args()
    if a.preencoded and a.mark_frame >= 0:
        p.error('--mark-frame counts frames from a mount\'s start: not with --preencoded offsets')
    Gst.init(None)
    keyint = a.keyint or a.fps
    total = frame_count(a.frames)
    # One shared encoder per mount: every client of a mount sees the same live stream.
    launch = (
        f'( multifilesrc location="{a.frames}/frame%05d.jpg" index=0 loop=true caps="image/jpeg,framerate={a.fps}/1" '
        + jpeg_to_h264(a, keyint) + '! rtph264pay name=pay0 pt=96 config-interval=1 )'
    )
    launches = None
    if a.preencoded:
        au_dir = encode_once(a, keyint, total)
        offsets = [float(x) for x in a.mount_offsets.split(',') if x] or [0.0]
        start = [(round(offsets[i % len(offsets)] * a.fps / keyint) * keyint) % total for i in range(len(a.mount or ['/stream']))]
        launches = [
            f'( multifilesrc location="{au_dir}/au%05d.h264" index={start[i]} start-index=0 loop=true '
            f'caps="video/x-h264,stream-format=byte-stream,alignment=au,framerate={a.fps}/1" '
            f'! h264parse ! rtph264pay name=pay0 pt=96 config-interval=1 )'
            for i in range(len(a.mount or ['/stream']))
        ]
    server = GstRtspServer.RTSPServer()
    server.set_address('127.0.0.1')
    server.set_service(str(a.port))
    mounts = server.get_mount_points()
    if a.tls:
        # TLS lives in RTSPAuth; with no users configured, the default token gives every client the
        # anonymous role, which each factory below lets in.
        auth = GstRtspServer.RTSPAuth()
        auth.set_tls_certificate(Gio.TlsCertificate.new_from_file(a.tls))
        token = GstRtspServer.RTSPToken()
        token.set_string('media.factory.role', 'anonymous')
        auth.set_default_token(token)
        server.set_auth(auth)
    if a.auth:
        user, password = a.auth.split(':', 1)
        auth = GstRtspServer.RTSPAuth()
        token = GstRtspServer.RTSPToken()
        token.set_string('media.factory.role', 'user')
        auth.add_basic(GstRtspServer.RTSPAuth.make_basic(user, password), token)
        server.set_auth(auth)
    if a.audio_mount:
        audio = GstRtspServer.RTSPMediaFactory()
        audio.set_launch('( audiotestsrc is-live=true ! audioconvert ! audio/x-raw,format=S16BE,channels=1,rate=8000 ! rtpL16pay name=pay0 pt=96 )')
        audio.set_shared(True)
        mounts.add_factory(a.audio_mount, audio)
    for i, m in enumerate(a.mount or ['/stream']):
        factory = GstRtspServer.RTSPMediaFactory()
        factory.set_launch(launches[i] if launches else launch)
        factory.set_shared(True)
        if a.auth:
            factory.add_role_from_structure(Gst.Structure.from_string(
                'user, media.factory.access=(boolean)true, media.factory.construct=(boolean)true')[0])
        if a.tls:
            factory.add_role_from_structure(Gst.Structure.from_string(
                'anonymous, media.factory.access=(boolean)true, media.factory.construct=(boolean)true')[0])
        if a.mark_frame >= 0:
            factory.connect('media-configure', lambda _f, media: mark_frames(media, a.mark_frame, total))
        mounts.add_factory(m, factory)
    if server.attach(None) == 0:
        print(f'FAILED to listen on 127.0.0.1:{a.port}', file=sys.stderr, flush=True)
        return 2
    print(f'READY {server.get_bound_port()}', flush=True)
    GLib.MainLoop().run()
    return 0


if __name__ == '__main__':
    sys.exit(main())
