class Post < ApplicationRecord
  # Pages watching PostsChannel show a new post as soon as it is saved.
  after_create_commit do
    ActionCable.server.broadcast(PostsChannel::STREAM, { id: id, title: title, body: body })
  end
end
