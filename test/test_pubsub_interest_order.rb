# frozen_string_literal: true

# A worker tells its master of its first subscription to a channel and of its last going away
# (Up::PubSub.interest_changed, lib/up/pub_sub.rb) in the order its registry changed, however
# app threads interleave (docs/websockets.md, "Engines": first subscriber in, last
# out). In process, with the worker's side of the link replaced by one that records what it is
# told and can hold a message on its way, as a thread switch or a link busy with a long publish
# holds it in a real worker; the master's side is test_pubsub_cluster.rb's.
require_relative "helper"
require_relative "support/ws_client"

class TestPubSubInterestOrder < Minitest::Test
  include UpTestHelpers

  # A worker's link (Up::PubSub::WorkerLink's interest and master?) that records [channel, on]
  # and holds the first message hold_at picks until released.
  class HeldLink
    def initialize(&hold_at)
      @hold_at = hold_at
      @told = Queue.new
      @held = Queue.new
      @release = Queue.new
    end

    def master?
      false
    end

    def interest(channel, _match, on)
      if @hold_at&.call(channel, on)
        @hold_at = nil
        @held << true
        @release.pop
      end
      @told << [channel, on]
    end

    def wait_held
      Timeout.timeout(5) { @held.pop }
    end

    def release
      @release << true
    end

    def told
      Array.new(@told.size) { @told.pop }
    end
  end

  # A server that serves (Up.subscribe needs one running in the process).
  def start_serving
    start_server(->(_env) { [200, {}, ["ok"]] })
    get("/")
  end

  # A WebSocket whose on_open hands its client over, then subscribes it to "race".
  class RaceHandler
    def initialize(clients)
      @clients = clients
    end

    def on_open(client)
      @clients << client
      client.subscribe("race")
    end
  end

  def upgrade_app(clients)
    handler = RaceHandler.new(clients)
    lambda do |env|
      env["rack.upgrade"] = handler
      [101, {}, []]
    end
  end

  def teardown
    Up::PubSub.cluster_link = nil
    super
  end

  # The race of a review: one thread ends the channel's last subscription, the registry drops
  # the channel, and before its "off" reaches the link another thread subscribes anew and gets
  # "on" there first. The master, told "on" (already held) then "off", would count no
  # subscriber in this worker while it has one, and its engines would leave the channel.
  def test_off_then_on_reach_the_master_in_the_registrys_order
    start_serving
    link = HeldLink.new { |_channel, on| !on }
    Up::PubSub.cluster_link = link
    first = Up.subscribe("race") { nil }
    ending = Thread.new { first.cancel }
    link.wait_held # the registry has no "race" now; its "off" is on its way
    starting = Thread.new { Up.subscribe("race") { nil } }
    Thread.pass until starting.stop? # done, or waiting for "off" to be told first
    link.release
    [ending, starting].each(&:join)
    assert starting.value.active?, "the worker has a subscriber"
    assert_equal [["race", true], ["race", false], ["race", true]], link.told,
                 "the master is told on, off, on: the last word is that this worker has a subscriber"
  ensure
    link&.release
    starting&.value&.cancel
  end

  # The reverse: a client's first subscription, its "on" held on its way, and another thread
  # ends it at once. Told "off" then "on", the master would count a subscriber that is gone
  # (and keep its engines on the channel).
  def test_on_then_off_reach_the_master_in_the_registrys_order
    clients = Queue.new
    start_server(upgrade_app(clients))
    link = HeldLink.new { |_channel, on| on }
    Up::PubSub.cluster_link = link
    ws = WSClient.open(@port)
    link.wait_held # on_open subscribed, and its "on" is on its way
    client = Timeout.timeout(5) { clients.pop }
    ending = Thread.new { client.unsubscribe("race") }
    Thread.pass until ending.stop? # done, or waiting for "on" to be told first
    link.release
    ending.join
    assert_equal [["race", true], ["race", false]], link.told, "the last word is that nobody is subscribed"
  ensure
    link&.release
    ws&.close_socket
  end

  # Whoever tells, a subscribe returns once its own change is told: what the thread publishes
  # after it reaches the master behind it (test_pubsub_cluster.rb's master_heard_of counts on it).
  def test_a_subscribe_returns_once_its_change_is_told
    start_serving
    link = HeldLink.new { |channel, _on| channel == "a" }
    Up::PubSub.cluster_link = link
    a = Thread.new { Up.subscribe("a") { nil } }
    link.wait_held
    b = Thread.new { Up.subscribe("b") { nil } }
    Thread.pass until b.stop?
    assert b.alive?, "b waits for a's change to be told before its own"
    link.release
    [a, b].each(&:join)
    assert_equal [["a", true], ["b", true]], link.told
  ensure
    link&.release
    [a, b].each { |t| t&.value&.cancel }
  end

  # An engine that subscribes when it hears of a channel: its change is told after the one
  # that made it, not from inside it (the link would hear of "b" before "a").
  class ChainingEngine
    def initialize(subs)
      @subs = subs
    end

    def subscribe(channel, _match)
      @subs << Up.subscribe("b") { nil } if channel == "a"
    end

    def unsubscribe(_channel, _match); end

    def publish(_channel, _message); end
  end

  def test_a_change_an_engine_makes_is_told_after_the_one_it_heard_of
    start_serving
    link = HeldLink.new
    Up::PubSub.cluster_link = link
    subs = []
    engine = Up::PubSub.attach(ChainingEngine.new(subs))
    subs << Up.subscribe("a") { nil }
    assert_equal [["a", true], ["b", true]], link.told
  ensure
    Up::PubSub.detach(engine) if engine
    subs&.each(&:cancel)
  end

  # Many threads make and end one channel's subscriptions at once, each ending subscribed or
  # not at random: the master's last word about the channel is what the registry holds.
  def test_churn_leaves_the_master_told_what_the_registry_holds
    start_serving
    link = HeldLink.new
    Up::PubSub.cluster_link = link
    kept = Queue.new
    threads = Array.new(8) do |i|
      Thread.new do
        200.times { Up.subscribe("churn") { nil }.tap { Thread.pass }.cancel }
        kept << Up.subscribe("churn") { nil } if i.even?
      end
    end
    threads.each(&:join)
    told = link.told
    assert_equal [true, false] * (told.size / 2) + [true], told.map(&:last), "on and off alternate, ending on"
    Array.new(kept.size) { kept.pop }.each(&:cancel)
    assert_equal ["churn", false], link.told.last
  end
end
