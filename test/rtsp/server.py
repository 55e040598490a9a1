#!/usr/bin/python3
"""Test RTSP server (GStreamer RTSP server from Debian): serves a looping H.264 stream built from a
directory of same-sized JPEG frames (frame00000.jpg, ...) at a given frame rate.

Usage: server.py --frames DIR --fps N [--port P] [--mount /stream] [--bitrate KBPS] [--mark-frame K] [--tls PEM]
                 [--auth USER:PASS] [--audio-mount /audio]
Prints "READY <port>" on stdout once it accepts connections. Run with /usr/bin/python3 (python3-gi).
With --mark-frame K it prints "MARK <unix ms>" whenever frame K of the loop enters the payloader
(bench/monitor.ts measures frame-to-event delay from it). With --tls PEM (certificate and key) it serves
rtsps:// only, to anyone (the anonymous role may open every mount).
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
    a = p.parse_args()
    Gst.init(None)
    keyint = a.keyint or a.fps
    # One shared encoder per mount: every client of a mount sees the same live stream.
    launch = (
        f'( multifilesrc location="{a.frames}/frame%05d.jpg" index=0 loop=true caps="image/jpeg,framerate={a.fps}/1" '
        f'! jpegdec ! videoconvert ! video/x-raw,format=I420 '
        f'! x264enc tune=zerolatency speed-preset=ultrafast bitrate={a.bitrate} key-int-max={keyint} '
        f'! video/x-h264,profile=baseline ! rtph264pay name=pay0 pt=96 config-interval=1 )'
    )
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
    for m in a.mount or ['/stream']:
        factory = GstRtspServer.RTSPMediaFactory()
        factory.set_launch(launch)
        factory.set_shared(True)
        if a.auth:
            factory.add_role_from_structure(Gst.Structure.from_string(
                'user, media.factory.access=(boolean)true, media.factory.construct=(boolean)true')[0])
        if a.tls:
            factory.add_role_from_structure(Gst.Structure.from_string(
                'anonymous, media.factory.access=(boolean)true, media.factory.construct=(boolean)true')[0])
        if a.mark_frame >= 0:
            total = len([f for f in os.listdir(a.frames) if f.startswith('frame')])
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
