// Credence sample: a game loop on Unity's main thread.
//
// Add this component to a GameObject and press Play. It connects to a running sidecar at
// `url` (or, with `launchSidecar`, starts `credence serve --port 0` itself and follows it
// across restarts), subscribes to one resident, tells that resident something, and reacts to
// the belief notifications. The network runs on the thread pool; every notification is
// handed to this component in Update(), by DispatchPending(), so the handlers may touch Unity
// objects. Editor and desktop players only: see the package README for WebGL.

using System;
using System.Threading;
using Credence;
using UnityEngine;

namespace Credence.Samples
{
    public class CredenceGameLoop : MonoBehaviour
    {
        /// <summary>The sidecar to connect to (what <c>credence serve</c> printed as CREDENCE_URL).</summary>
        public string url = "ws://127.0.0.1:8765/";
        /// <summary>The world: one per save game.</summary>
        public string world = "sample-town";
        /// <summary>Writer token; empty for a sidecar without tokens.</summary>
        public string token = "";
        /// <summary>Start <c>credence serve --port 0</c> from here instead of connecting to <c>url</c>.</summary>
        public bool launchSidecar;
        /// <summary>The sidecar program (on the PATH, or a full path).</summary>
        public string sidecarCommand = "credence";
        /// <summary>Its arguments after <c>serve --port 0</c>, separated by spaces.</summary>
        public string sidecarArguments = "--db credence-sample.db";
        /// <summary>The resident whose beliefs this component follows.</summary>
        public string resident = "mira";
        /// <summary>Most notifications handled per frame (the rest wait for the next frame).</summary>
        public int maxPerFrame = 100;
        /// <summary>How long to wait for a sidecar that is not up yet before saying so.</summary>
        public float connectSeconds = 15;

        /// <summary>What the NPC does with its belief: avoid the well while it believes it poisoned.</summary>
        public bool avoidsWell;
        /// <summary>The last change handled, for a debug overlay.</summary>
        public BeliefChange lastChange;

        CredenceClient credence;
        SidecarProcess sidecar;

        async void Start()
        {
            try
            {
                if (launchSidecar)
                {
                    sidecar = await SidecarProcess.StartAsync(new SidecarOptions
                    {
                        Command = sidecarCommand,
                        Arguments = sidecarArguments.Split(new[] { ' ' }, StringSplitOptions.RemoveEmptyEntries),
                    });
                    Debug.Log("Credence: started the sidecar at " + sidecar.Url);
                }
                var fixedUrl = new Uri(url);
                credence = new CredenceClient(new CredenceOptions
                {
                    UrlSource = () => sidecar != null ? sidecar.Url : fixedUrl,
                    World = world,
                    Token = string.IsNullOrEmpty(token) ? null : token,
                    Subscribe = new[] { resident },
                    ClientName = "credence-unity-sample/0.1",
                });
                credence.BeliefChanged += OnBeliefChanged;
                credence.ConnectionLost += gone => Debug.LogWarning("Credence: connection lost (" + gone.CloseCode + "), final: " + gone.Final);
                credence.ErrorReceived += error => Debug.LogWarning("Credence: " + error.Message);
                Welcome welcome;
                // ConnectAsync waits for a sidecar still starting (or full); bound the wait.
                using (var giveUp = new CancellationTokenSource(TimeSpan.FromSeconds(connectSeconds)))
                {
                    try
                    {
                        welcome = await credence.ConnectAsync(giveUp.Token);
                    }
                    catch (OperationCanceledException)
                    {
                        Debug.LogError("Credence: no sidecar answered at " + url + " within " + connectSeconds
                            + " s: is `credence serve` running there?");
                        return;
                    }
                }
                Debug.Log("Credence: connected to " + welcome.World + " as " + welcome.Role + " at seq " + welcome.Seq);

                // Bo tells the resident the well is poisoned. A real game derives event ids from
                // its own state (so a retry after a crash has the same id); a GUID is fine here.
                var ack = await credence.SendEventAsync(Events.Say("sample/" + Guid.NewGuid().ToString("N"), 1, "bo",
                    new[] { resident }, "water:well", "poisoned", "Bo says the well is poisoned"));
                Debug.Log("Credence: the sidecar stored it with " + ack.Changes + " changes");
            }
            catch (Exception e)
            {
                Debug.LogError("Credence: " + e.Message);
            }
        }

        void Update()
        {
            if (credence != null) credence.DispatchPending(maxPerFrame);  // raises OnBeliefChanged here
        }

        void OnBeliefChanged(BeliefChange change)
        {
            lastChange = change;
            Debug.Log("Credence: " + change.Resident + " " + change.Change + " " + change.Root + " = " + change.Value + " (" + change.Confidence + ")");
            if (change.Resident == resident && change.Root == "water:well")
                avoidsWell = change.Value as string == "poisoned" && change.Confidence >= 50;
        }

        /// <summary>Call from gameplay when the resident looks into the well itself.</summary>
        public async void SawTheWell(bool clean)
        {
            if (credence == null) return;
            try
            {
                await credence.SendEventAsync(Events.Observe("sample/" + Guid.NewGuid().ToString("N"), 2,
                    new[] { resident }, "water:well", clean ? "clean" : "poisoned", clean ? "The water is clear" : "The water stinks"));
            }
            catch (Exception e)
            {
                Debug.LogError("Credence: " + e.Message);
            }
        }

        void OnDestroy()
        {
            if (credence != null) credence.Dispose();
            if (sidecar != null) sidecar.Dispose();
        }
    }
}
