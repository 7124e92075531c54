# frozen_string_literal: true

require "json"

# One browser in the chat room of examples/chat: config.ru makes one for each WebSocket it
# accepts, as that connection's handler, and it keeps the member's name once they joined.
#
# The first message a browser sends is its name, every later one a line of chat. What the
# room says goes to the channel ROOM with client.publish, which reaches every worker of the
# cluster; each member's socket is subscribed without a block, so the server writes the
# room's messages to it itself, without running Ruby once per member. Messages to the page
# are JSON objects with a type: hello (which worker holds the socket), welcome (the name is
# accepted), join, say, leave, refused (a name or line that breaks the rules) and bye.
class ChatMember
  ROOM = "chat:room"
  MAX_NAME = 32
  MAX_TEXT = 500
  # Unicode's control characters (Cc), which [[:cntrl:]] means on MRI; spelled out because
  # Opal hands a regexp to JavaScript, which has no POSIX bracket classes and reads that one
  # as "one of [:cntrl, then ]" (so "Ada :]" was refused and a tab let through).
  CONTROL = /[\u0000-\u001F\u007F-\u009F]/

  def on_open(client)
    client.write(JSON.generate(type: "hello", worker: Process.pid))
  end

  def on_message(client, data)
    text = data.encoding == Encoding::UTF_8 ? data.strip : ""
    @name ? say(client, text) : join(client, text)
  end

  def on_shutdown(client)
    client.write(JSON.generate(type: "bye", text: "The server is stopping."))
  end

  def on_close(client)
    client.publish(ROOM, JSON.generate(type: "leave", name: @name)) if @name
  end

  private

  def join(client, name)
    unless name.length.between?(1, MAX_NAME) && !name.match?(CONTROL)
      return refuse(client, "A name is 1 to #{MAX_NAME} printable characters.")
    end

    @name = name
    client.subscribe(ROOM)
    client.write(JSON.generate(type: "welcome", name: name))
    client.publish(ROOM, JSON.generate(type: "join", name: name))
  end

  def say(client, text)
    unless text.length.between?(1, MAX_TEXT)
      return refuse(client, "A message is 1 to #{MAX_TEXT} characters.")
    end

    client.publish(ROOM, JSON.generate(type: "say", name: @name, text: text))
  end

  def refuse(client, why)
    client.write(JSON.generate(type: "refused", text: why))
  end
end
